// Every way a plugin can fail to load, checked for what the error tells the
// user: the plugin, every path tried, and why each failed.
#include "plugin/loader.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace hvd {
namespace {

const std::string kPlugins = HVD_TEST_PLUGINS;
const std::string kShadow = HVD_TEST_SHADOW;
const std::string kMissingDir = kPlugins + "/no-such-folder";

std::string plugin_file(const std::string& dir, const std::string& kind,
                        const std::string& name) {
  return dir + "/libhorovod-" + kind + "-" + name + ".so";
}

struct Failure {
  hvd_status status = HVD_OK;
  std::string message;
};

Failure load_failure(const PluginLoader& loader, int kind,
                     const std::string& name) {
  try {
    loader.load(kind, name);
  } catch (const Error& e) {
    return {e.status(), e.what()};
  }
  ADD_FAILURE() << name << " loaded but should not have";
  return {};
}

// The reason the loader gives for `path`: its line in the message.
std::string line_of(const std::string& message, const std::string& path) {
  size_t at = message.find("\n  " + path + ": ");
  if (at == std::string::npos) return "";
  at += 3 + path.size() + 2;
  return message.substr(at, message.find('\n', at) - at);
}

// The fixture "major2" declares the next major at the core's minor.
const std::string kMajor2Message =
    "built for ABI 2." + std::to_string(HVD_ABI_VERSION_MINOR) +
    ", this core is 1." + std::to_string(HVD_ABI_VERSION_MINOR);

TEST(PluginLoader, NotFoundListsEveryPathTried) {
  PluginLoader loader({kMissingDir, kPlugins});
  Failure f = load_failure(loader, HVD_PLUGIN_TRANSPORT, "nosuch");
  EXPECT_EQ(f.status, HVD_ERR_NOT_FOUND);
  EXPECT_NE(f.message.find("cannot load transport 'nosuch'"), std::string::npos)
      << f.message;
  EXPECT_EQ(line_of(f.message, plugin_file(kMissingDir, "transport", "nosuch")),
            "file not found")
      << f.message;
  EXPECT_EQ(line_of(f.message, plugin_file(kPlugins, "transport", "nosuch")),
            "file not found")
      << f.message;
}

TEST(PluginLoader, EmptySearchPathSaysSo) {
  PluginLoader loader({});
  Failure f = load_failure(loader, HVD_PLUGIN_REDUCER, "ring");
  EXPECT_EQ(f.status, HVD_ERR_NOT_FOUND);
  EXPECT_NE(f.message.find("reducer 'ring'"), std::string::npos);
  EXPECT_NE(f.message.find("search path is empty"), std::string::npos);
}

TEST(PluginLoader, NotASharedObjectGivesTheDynamicLoadersReason) {
  const std::string path = plugin_file(kPlugins, "transport", "bogus");
  ASSERT_EQ(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL), nullptr);
  std::string expected = dlerror();
  ASSERT_EQ(expected.rfind(path + ": ", 0), 0u) << expected;
  expected.erase(0, path.size() + 2);  // "invalid ELF header"

  PluginLoader loader({kMissingDir, kPlugins});
  Failure f = load_failure(loader, HVD_PLUGIN_TRANSPORT, "bogus");
  EXPECT_EQ(f.status, HVD_ERR_NOT_FOUND);
  EXPECT_NE(f.message.find("transport 'bogus'"), std::string::npos);
  EXPECT_EQ(line_of(f.message, plugin_file(kMissingDir, "transport", "bogus")),
            "file not found")
      << f.message;
  EXPECT_EQ(line_of(f.message, path), expected) << f.message;
  EXPECT_NE(expected.find("ELF"), std::string::npos) << expected;
}

TEST(PluginLoader, MissingEntrySymbol) {
  PluginLoader loader({kPlugins});
  Failure f = load_failure(loader, HVD_PLUGIN_TRANSPORT, "nosym");
  EXPECT_EQ(f.status, HVD_ERR_NOT_FOUND);
  EXPECT_EQ(line_of(f.message, plugin_file(kPlugins, "transport", "nosym")),
            "entry symbol 'hvd_transport_get_api' missing")
      << f.message;
}

TEST(PluginLoader, EntryPointDeclining) {
  PluginLoader loader({kPlugins});
  Failure f = load_failure(loader, HVD_PLUGIN_TRANSPORT, "declines");
  EXPECT_EQ(f.status, HVD_ERR_VERSION);
  EXPECT_EQ(line_of(f.message, plugin_file(kPlugins, "transport", "declines")),
            "the entry point returned no table (the plugin declines ABI 1." +
                std::to_string(HVD_ABI_VERSION_MINOR) + ")")
      << f.message;
}

TEST(PluginLoader, WrongMajorNamesBothVersions) {
  PluginLoader loader({kPlugins});
  Failure f = load_failure(loader, HVD_PLUGIN_TRANSPORT, "major2");
  EXPECT_EQ(f.status, HVD_ERR_VERSION);
  EXPECT_NE(f.message.find("transport 'major2'"), std::string::npos);
  EXPECT_EQ(line_of(f.message, plugin_file(kPlugins, "transport", "major2")),
            kMajor2Message)
      << f.message;
}

TEST(PluginLoader, TableTooSmallNamesBothSizes) {
  PluginLoader loader({kPlugins});
  Failure f = load_failure(loader, HVD_PLUGIN_TRANSPORT, "small");
  EXPECT_EQ(f.status, HVD_ERR_VERSION);
  EXPECT_EQ(line_of(f.message, plugin_file(kPlugins, "transport", "small")),
            "table of 40 bytes, ABI 1.0 needs " +
                std::to_string(HVD_STRUCT_SIZE(hvd_transport_api, iget)))
      << f.message;
}

TEST(PluginLoader, RequiredFunctionMissing) {
  PluginLoader loader({kPlugins});
  Failure f = load_failure(loader, HVD_PLUGIN_TRANSPORT, "noisend");
  EXPECT_EQ(f.status, HVD_ERR_VERSION);
  EXPECT_EQ(line_of(f.message, plugin_file(kPlugins, "transport", "noisend")),
            "required function 'isend' missing")
      << f.message;

  f = load_failure(loader, HVD_PLUGIN_REDUCER, "nopost");
  EXPECT_EQ(line_of(f.message, plugin_file(kPlugins, "reducer", "nopost")),
            "required function 'post' missing")
      << f.message;

  f = load_failure(loader, HVD_PLUGIN_ADAPTER, "nodone");
  EXPECT_EQ(line_of(f.message, plugin_file(kPlugins, "adapter", "nodone")),
            "required function 'done' missing")
      << f.message;
}

TEST(PluginLoader, TableOfAnotherKind) {
  PluginLoader loader({kPlugins});
  Failure f = load_failure(loader, HVD_PLUGIN_TRANSPORT, "kindreducer");
  EXPECT_EQ(f.status, HVD_ERR_VERSION);
  EXPECT_EQ(
      line_of(f.message, plugin_file(kPlugins, "transport", "kindreducer")),
      "table kind is reducer, expected transport")
      << f.message;
}

TEST(PluginLoader, BrokenFileIsNeverSkippedForALaterOne) {
  PluginLoader loader({kMissingDir, kPlugins, kShadow});
  Failure f = load_failure(loader, HVD_PLUGIN_TRANSPORT, "shadowed");
  EXPECT_EQ(f.status, HVD_ERR_VERSION);
  EXPECT_EQ(
      line_of(f.message, plugin_file(kMissingDir, "transport", "shadowed")),
      "file not found");
  EXPECT_EQ(line_of(f.message, plugin_file(kPlugins, "transport", "shadowed")),
            kMajor2Message);
  EXPECT_EQ(f.message.find(kShadow), std::string::npos) << f.message;

  // Without the broken one in the way, the good one loads.
  auto plugin =
      PluginLoader({kShadow, kPlugins}).load(HVD_PLUGIN_TRANSPORT, "shadowed");
  EXPECT_EQ(plugin->path(), plugin_file(kShadow, "transport", "shadowed"));
}

TEST(PluginLoader, LoadsByNameAndByPath) {
  PluginLoader loader({kMissingDir, kPlugins});
  auto by_name = loader.load(HVD_PLUGIN_TRANSPORT, "good");
  const std::string path = plugin_file(kPlugins, "transport", "good");
  EXPECT_EQ(by_name->kind(), HVD_PLUGIN_TRANSPORT);
  EXPECT_EQ(by_name->name(), "good");
  EXPECT_EQ(by_name->path(), path);
  EXPECT_STREQ(by_name->header().name, "fake");
  EXPECT_STREQ(by_name->header().version, "1.2.3-fake");
  EXPECT_EQ(by_name->describe(), "transport 'good' (" + path + ")");
  EXPECT_NE(by_name->transport().isend, nullptr);
  EXPECT_THROW(by_name->reducer(), Error);
  EXPECT_THROW(by_name->adapter(), Error);

  // A path needs no search path at all.
  auto by_path = PluginLoader({}).load(HVD_PLUGIN_TRANSPORT, path);
  EXPECT_EQ(by_path->path(), path);
  EXPECT_EQ(by_path->name(), path);

  auto reducer = loader.load(HVD_PLUGIN_REDUCER, "good");
  EXPECT_NE(reducer->reducer().post, nullptr);
  auto adapter = loader.load(HVD_PLUGIN_ADAPTER, "good");
  EXPECT_NE(adapter->adapter().done, nullptr);
}

TEST(PluginLoader, PathThatDoesNotExist) {
  const std::string path = kMissingDir + "/libmine.so";
  Failure f = load_failure(PluginLoader({kPlugins}), HVD_PLUGIN_REDUCER, path);
  EXPECT_EQ(f.status, HVD_ERR_NOT_FOUND);
  EXPECT_EQ(line_of(f.message, path), "file not found") << f.message;
  EXPECT_EQ(f.message.find(kPlugins + "/libhorovod"), std::string::npos);
}

TEST(PluginInit, FailureCarriesThePluginsMessage) {
  PluginLoader loader({kPlugins});
  auto transport = loader.load(HVD_PLUGIN_TRANSPORT, "initfail");
  try {
    init_transport(*transport, nullptr);
    FAIL() << "init should have failed";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_CONFIG);
    EXPECT_EQ(std::string(e.what()),
              "transport 'initfail' (" +
                  plugin_file(kPlugins, "transport", "initfail") +
                  "): init failed (configuration error): no interface "
                  "matches 'eth9'");
  }

  auto reducer = loader.load(HVD_PLUGIN_REDUCER, "initfail");
  try {
    init_reducer(*reducer, nullptr);
    FAIL() << "init should have failed";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(std::string(e.what()),
              "reducer 'initfail' (" +
                  plugin_file(kPlugins, "reducer", "initfail") +
                  "): init failed (out of memory): cannot allocate the "
                  "schedule");
  }
}

TEST(PluginInit, SuccessGivesTheInstance) {
  PluginLoader loader({kPlugins});
  auto transport = loader.load(HVD_PLUGIN_TRANSPORT, "good");
  hvd_transport* t = init_transport(*transport, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(transport->transport().finalize(t), HVD_OK);
  auto reducer = loader.load(HVD_PLUGIN_REDUCER, "good");
  hvd_reducer* r = init_reducer(*reducer, nullptr);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(reducer->reducer().finalize(r), HVD_OK);
  EXPECT_THROW(init_reducer(*transport, nullptr), Error);
}

TEST(PluginLoader, DiscoverListsEveryPluginWithItsResult) {
  PluginLoader loader({kMissingDir, kPlugins, kShadow});
  auto found = loader.discover();
  auto find = [&](const std::string& dir, const std::string& kind,
                  const std::string& name) -> const PluginLoader::Found* {
    for (const auto& f : found) {
      if (f.path == plugin_file(dir, kind, name)) return &f;
    }
    return nullptr;
  };
  const auto* good = find(kPlugins, "transport", "good");
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->kind, HVD_PLUGIN_TRANSPORT);
  EXPECT_EQ(good->name, "good");
  EXPECT_EQ(good->version, "1.2.3-fake");
  EXPECT_EQ(good->abi_major, 1u);
  EXPECT_EQ(good->abi_minor, static_cast<uint32_t>(HVD_ABI_VERSION_MINOR));
  EXPECT_EQ(good->error, "");

  const auto* major2 = find(kPlugins, "transport", "major2");
  ASSERT_NE(major2, nullptr);
  EXPECT_EQ(major2->abi_major, 2u);
  EXPECT_EQ(major2->error, kMajor2Message);

  const auto* bogus = find(kPlugins, "transport", "bogus");
  ASSERT_NE(bogus, nullptr);
  EXPECT_NE(bogus->error.find("ELF"), std::string::npos) << bogus->error;

  const auto* nodone = find(kPlugins, "adapter", "nodone");
  ASSERT_NE(nodone, nullptr);
  EXPECT_EQ(nodone->kind, HVD_PLUGIN_ADAPTER);
  EXPECT_EQ(nodone->error, "required function 'done' missing");

  // Both copies of a name are listed, in search-path order.
  const auto* first = find(kPlugins, "transport", "shadowed");
  const auto* second = find(kShadow, "transport", "shadowed");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_LT(first, second);
  EXPECT_EQ(second->error, "");

  for (const auto& f : found) {
    EXPECT_EQ(f.path.find("README"), std::string::npos);
  }
}

TEST(PluginTable, CheckedWithoutLoading) {
  PluginLoader loader({kPlugins});
  auto adapter = loader.load(HVD_PLUGIN_ADAPTER, "good");
  EXPECT_EQ(check_plugin_table(HVD_PLUGIN_ADAPTER, &adapter->adapter()), "");

  hvd_adapter_api copy = adapter->adapter();
  copy.allocate_output = nullptr;
  copy.done = nullptr;
  EXPECT_EQ(check_plugin_table(HVD_PLUGIN_ADAPTER, &copy),
            "required functions 'allocate_output', 'done' missing");
  copy = adapter->adapter();
  copy.name = nullptr;
  EXPECT_EQ(check_plugin_table(HVD_PLUGIN_ADAPTER, &copy),
            "the table has no name");
  copy = adapter->adapter();
  copy.abi_minor = 7;  // a newer minor loads: its extra fields are ignored
  EXPECT_EQ(check_plugin_table(HVD_PLUGIN_ADAPTER, &copy), "");
  EXPECT_EQ(check_plugin_table(HVD_PLUGIN_TRANSPORT, &copy),
            "table kind is adapter, expected transport");
}

}  // namespace
}  // namespace hvd
