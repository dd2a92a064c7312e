// The default search path: configured folders, then HOROVOD_PLUGIN_PATH, then
// the plugin folder of the install the code runs from, found from the binary
// holding it, so a copied prefix works without any variable.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "plugin/loader.h"

namespace hvd {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int status = -1;
  std::string output;
};

RunResult run(const std::string& command) {
  RunResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    result.output.append(buffer, n);
  }
  int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

class SearchPath : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* old = getenv("HOROVOD_PLUGIN_PATH")) saved_ = old;
    had_ = getenv("HOROVOD_PLUGIN_PATH") != nullptr;
    unsetenv("HOROVOD_PLUGIN_PATH");
  }
  void TearDown() override {
    if (had_) setenv("HOROVOD_PLUGIN_PATH", saved_.c_str(), 1);
  }
  std::string saved_;
  bool had_ = false;
};

TEST_F(SearchPath, ConfiguredThenEnvironmentThenInstall) {
  setenv("HOROVOD_PLUGIN_PATH", "/env/one::/env/two:/configured", 1);
  auto path = PluginLoader::default_search_path({"/configured", "/other"});
  ASSERT_GE(path.size(), 4u);
  EXPECT_EQ(path[0], "/configured");
  EXPECT_EQ(path[1], "/other");
  EXPECT_EQ(path[2], "/env/one");
  EXPECT_EQ(path[3], "/env/two");
  // Then the install's own folder: this test runs from <build>/bin.
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  EXPECT_EQ(path[4], (exe.parent_path().parent_path() / "lib" / "horovod")
                         .lexically_normal()
                         .string());
  for (size_t i = 5; i < path.size(); ++i) {
    EXPECT_NE(path[i], "/configured");  // listed once
    EXPECT_TRUE(fs::is_directory(path[i])) << path[i];
  }
}

TEST_F(SearchPath, InstallFolderIsNamedEvenWhenThePluginIsMissing) {
  RunResult r = run(std::string("'") + HVD_TEST_PROBE_EXE + "' nosuch");
  EXPECT_EQ(r.status, 1) << r.output;
  const std::string dir =
      fs::weakly_canonical(std::string(HVD_TEST_EXE_PREFIX) + "/lib/horovod")
          .string();
  EXPECT_NE(r.output.find("\n  " + dir +
                          "/libhorovod-transport-nosuch.so: file not found"),
            std::string::npos)
      << r.output;
}

TEST_F(SearchPath, ExecutableInPrefixBinFindsPrefixLibHorovod) {
  RunResult r = run(std::string("'") + HVD_TEST_PROBE_EXE + "' good");
  EXPECT_EQ(r.status, 0) << r.output;
  const std::string dir =
      fs::weakly_canonical(std::string(HVD_TEST_EXE_PREFIX) + "/lib/horovod")
          .string();
  EXPECT_NE(r.output.find("search " + dir + "\n"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("loaded " + dir +
                          "/libhorovod-transport-good.so version exe-prefix"),
            std::string::npos)
      << r.output;
}

TEST_F(SearchPath, LibraryInPrefixLibFindsPrefixLibHorovod) {
  // The driver lives elsewhere; the loader's code is in <prefix>/lib/.
  RunResult r = run(std::string("'") + HVD_TEST_PROBE_DRIVER + "' good");
  EXPECT_EQ(r.status, 0) << r.output;
  const std::string dir =
      fs::weakly_canonical(std::string(HVD_TEST_LIB_PREFIX) + "/lib/horovod")
          .string();
  EXPECT_NE(r.output.find("loaded " + dir +
                          "/libhorovod-transport-good.so version lib-prefix"),
            std::string::npos)
      << r.output;
}

TEST_F(SearchPath, CopiedPrefixFindsItsOwnPlugins) {
  char pattern[] = "/tmp/hvd-plugin-test-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const fs::path copy = fs::path(pattern) / "copied";
  fs::copy(HVD_TEST_EXE_PREFIX, copy, fs::copy_options::recursive);
  const std::string exe =
      (copy / "bin" / fs::path(HVD_TEST_PROBE_EXE).filename()).string();
  RunResult r = run("'" + exe + "' good");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("loaded " + (copy / "lib/horovod").string() +
                          "/libhorovod-transport-good.so version exe-prefix"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(HVD_TEST_EXE_PREFIX), std::string::npos) << r.output;
  fs::remove_all(pattern);
}

}  // namespace
}  // namespace hvd
