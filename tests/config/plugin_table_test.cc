// Each plugin gets only its own table, flattened, with sources.
#include <gtest/gtest.h>

#include "config_test_support.h"

namespace hvd {
namespace {

using testing::load_text;

const char* kPlugins =
    "[transport]\n"
    "inter = \"ofi\"\n"
    "\n"
    "[transport.ofi]\n"
    "provider = \"efa\"\n"
    "rails = 4\n"
    "ratio = 0.5\n"
    "fork_safe = true\n"
    "domains = [\"rdmap0\", \"rdmap1\"]\n"
    "tuning.eager = \"8KiB\"\n"
    "\n"
    "[transport.ofi.retry]\n"
    "count = 3\n"
    "\n"
    "[reducer.ring]\n"
    "chunk = \"1MiB\"\n"
    "\n"
    "[adapter.torch]\n"
    "streams = 2\n";

const hvd_config_value* find(const hvd_config_table* table,
                             const std::string& key) {
  for (size_t i = 0; i < table->count; ++i)
    if (key == table->values[i].key) return &table->values[i];
  return nullptr;
}

TEST(ConfigPluginTables, EachPluginSeesOnlyItsOwnTable) {
  Config config = load_text(kPlugins);
  const hvd_config_table* ofi = config.plugin_table("transport", "ofi");
  EXPECT_STREQ(ofi->name, "transport.ofi");
  EXPECT_EQ(ofi->struct_size, sizeof(hvd_config_table));
  ASSERT_EQ(ofi->count, 7u);
  EXPECT_EQ(find(ofi, "chunk"), nullptr);
  EXPECT_EQ(find(ofi, "inter"), nullptr);

  const hvd_config_table* ring = config.plugin_table("reducer", "ring");
  ASSERT_EQ(ring->count, 1u);
  EXPECT_STREQ(ring->values[0].key, "chunk");
  EXPECT_EQ(ring->values[0].type, HVD_VALUE_STRING);
  EXPECT_STREQ(ring->values[0].string_value, "1MiB");

  const hvd_config_table* torch = config.plugin_table("adapter", "torch");
  ASSERT_EQ(torch->count, 1u);
  EXPECT_EQ(torch->values[0].int_value, 2);

  const hvd_config_table* tree = config.plugin_table("reducer", "tree");
  EXPECT_STREQ(tree->name, "reducer.tree");
  EXPECT_EQ(tree->count, 0u);
  EXPECT_EQ(config.plugin_table("reducer", "tree"), tree);  // stable
}

TEST(ConfigPluginTables, ValuesKeepTypesAndSources) {
  Config config = load_text(kPlugins);
  const hvd_config_table* ofi = config.plugin_table("transport", "ofi");
  const std::string file = config.file();

  const hvd_config_value* provider = find(ofi, "provider");
  ASSERT_NE(provider, nullptr);
  EXPECT_EQ(provider->type, HVD_VALUE_STRING);
  EXPECT_STREQ(provider->string_value, "efa");
  EXPECT_EQ(provider->source, file + ":5:1");
  EXPECT_EQ(provider->struct_size, sizeof(hvd_config_value));

  EXPECT_EQ(find(ofi, "rails")->type, HVD_VALUE_INT);
  EXPECT_EQ(find(ofi, "rails")->int_value, 4);
  EXPECT_EQ(find(ofi, "ratio")->type, HVD_VALUE_FLOAT);
  EXPECT_DOUBLE_EQ(find(ofi, "ratio")->float_value, 0.5);
  EXPECT_EQ(find(ofi, "fork_safe")->type, HVD_VALUE_BOOL);
  EXPECT_EQ(find(ofi, "fork_safe")->bool_value, 1);

  const hvd_config_value* domains = find(ofi, "domains");
  ASSERT_EQ(domains->type, HVD_VALUE_ARRAY);
  ASSERT_EQ(domains->item_count, 2u);
  EXPECT_STREQ(domains->items[1].string_value, "rdmap1");
  EXPECT_STREQ(domains->items[1].key, "domains[1]");

  // Nested tables flatten to dotted keys.
  ASSERT_NE(find(ofi, "tuning.eager"), nullptr);
  EXPECT_EQ(find(ofi, "tuning.eager")->source, file + ":10:8");
  ASSERT_NE(find(ofi, "retry.count"), nullptr);
  EXPECT_EQ(find(ofi, "retry.count")->int_value, 3);
}

TEST(ConfigPluginTables, KeyErrorsPointAtTheKeyOrTheTable) {
  Config config = load_text(kPlugins);
  const std::string file = config.file();
  EXPECT_EQ(config.plugin_key_error("transport", "ofi", "provider",
                                    "unknown provider"),
            file + ":5:1: key 'transport.ofi.provider': unknown provider");
  EXPECT_EQ(config.plugin_key_error("transport", "ofi", "domains[1]", "no"),
            file + ":9:22: key 'transport.ofi.domains[1]': no");
  EXPECT_EQ(config.plugin_key_error("transport", "ofi", "mtu", "required"),
            file +
                ":4:1: key 'transport.ofi.mtu' (in [transport.ofi]): "
                "required");
  EXPECT_EQ(config.plugin_key_error("transport", "ucx", "tls", "required"),
            file +
                ": key 'transport.ucx.tls' (no [transport.ucx] table): "
                "required");
}

TEST(ConfigPluginTables, EntriesListPluginValuesAfterTheCoreKeys) {
  Config config = load_text(kPlugins);
  std::vector<Config::Entry> entries = config.entries();
  size_t core_end = 0;
  while (core_end < entries.size() &&
         entries[core_end].key.find("ofi") == std::string::npos &&
         entries[core_end].key.find("ring") == std::string::npos &&
         entries[core_end].key.find("torch") == std::string::npos)
    ++core_end;
  ASSERT_LT(core_end, entries.size());
  bool provider = false;
  for (size_t i = core_end; i < entries.size(); ++i) {
    if (entries[i].key == "transport.ofi.provider") {
      provider = true;
      EXPECT_EQ(entries[i].value, "\"efa\"");
    }
    if (entries[i].key == "transport.ofi.domains") {
      EXPECT_EQ(entries[i].value, "[\"rdmap0\", \"rdmap1\"]");
    }
  }
  EXPECT_TRUE(provider);
}

TEST(ConfigPluginTables, TablesInsideArraysAreRefused) {
  std::string e =
      testing::load_error("[transport.ofi]\nrails = [{ name = \"a\" }]\n");
  EXPECT_THAT(
      e,
      ::testing::HasSubstr(
          ":2:10: key 'transport.ofi.rails[0]': a plugin's table cannot hold "
          "tables inside arrays"));
}

}  // namespace
}  // namespace hvd
