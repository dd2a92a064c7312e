// canonical() / digest() / diff(): what every rank must agree on.
#include <gtest/gtest.h>

#include "config_test_support.h"

namespace hvd {
namespace {

using testing::load_text;

TEST(ConfigDigest, EqualForEqualSettingsWhereverTheyCameFrom) {
  Config defaults;
  Config from_file = load_text("[runtime]\nfusion_threshold = \"128MiB\"\n");
  Config from_env = load_text("", {{"HOROVOD_FUSION_THRESHOLD", "134217728"}});
  EXPECT_EQ(defaults.digest(), from_file.digest());
  EXPECT_EQ(defaults.digest(), from_env.digest());
  EXPECT_EQ(defaults.digest().size(), 64u);
  EXPECT_EQ(defaults.canonical(), from_env.canonical());
}

TEST(ConfigDigest, PerRankSettingsDoNotCount) {
  Config defaults;
  Config local = load_text(
      "[log]\nlevel = \"debug\"\nhide_time = true\n"
      "[timeline]\npath = \"/tmp/rank3.json\"\n"
      "[plugins]\nsearch_path = [\"/opt/x\"]\n"
      "[runtime]\nstart_timeout = \"5m\"\nspin_time = \"1us\"\n"
      "autotune_log = \"/tmp/a.csv\"\n",
      {{"HOROVOD_NETWORK_INTERFACES", "ens5"}});
  EXPECT_EQ(defaults.digest(), local.digest());
  EXPECT_EQ(local.canonical().find("log.level"), std::string::npos);
  EXPECT_EQ(local.canonical().find("transport.tcp.interfaces"),
            std::string::npos);
}

TEST(ConfigDigest, DiffNamesTheKeysThatDiffer) {
  Config a = load_text(
      "[runtime]\ncycle_time = \"2ms\"\n"
      "[transport.ofi]\nprovider = \"efa\"\n"
      "[[allreduce.rules]]\nreducer = \"tree\"\n");
  Config b = load_text(
      "[transport]\ninter = [\"ofi\", \"tcp\"]\n"
      "[transport.ofi]\nprovider = \"verbs\"\n",
      {{"HOROVOD_GLOO_TIMEOUT_SECONDS", "9"}});
  EXPECT_NE(a.digest(), b.digest());
  EXPECT_EQ(
      Config::diff(a.canonical(), b.canonical()),
      (std::vector<std::string>{"allreduce.rules[0]", "runtime.cycle_time",
                                "transport.gloo.timeout", "transport.inter",
                                "transport.ofi.provider"}));
  EXPECT_TRUE(Config::diff(a.canonical(), a.canonical()).empty());
}

TEST(ConfigDigest, CanonicalIsSortedKeyValueLines) {
  std::string text = Config().canonical();
  EXPECT_NE(text.find("runtime.fusion_threshold = \"128MiB\"\n"),
            std::string::npos);
  EXPECT_NE(text.find("transport.intra = [\"shm\"]\n"), std::string::npos);
  std::string previous;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    EXPECT_LT(previous, line);
    previous = line;
    start = end + 1;
  }
}

}  // namespace
}  // namespace hvd
