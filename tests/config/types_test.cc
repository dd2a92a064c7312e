// Every value type of the schema read from a file, through the getters.
#include <gtest/gtest.h>

#include "config_test_support.h"

namespace hvd {
namespace {

using std::chrono::nanoseconds;
using testing::load_text;

TEST(ConfigTypes, DefaultsWithoutAFile) {
  Config config;
  EXPECT_EQ(config.file(), "");
  EXPECT_EQ(config.get_bytes("runtime.fusion_threshold"), 128u << 20);
  EXPECT_EQ(config.get_duration("runtime.cycle_time"), nanoseconds(1000000));
  EXPECT_EQ(config.get_int("runtime.cache_capacity"), 1024);
  EXPECT_EQ(config.get_duration("runtime.spin_time"), nanoseconds(50000));
  EXPECT_TRUE(config.get_bool("stall_check.enabled"));
  EXPECT_EQ(config.get_duration("stall_check.shutdown_time"),
            std::chrono::minutes(30));
  EXPECT_EQ(config.get_string("log.level"), "warning");
  EXPECT_EQ(config.get_string("bootstrap.backend"), "auto");
  EXPECT_EQ(config.get_strings("transport.intra"),
            std::vector<std::string>{"shm"});
  EXPECT_EQ(config.get_strings("reducer.load"),
            (std::vector<std::string>{"ring", "tree", "halving-doubling",
                                      "adasum", "native"}));
  EXPECT_TRUE(config.get_strings("plugins.search_path").empty());
  EXPECT_EQ(config.source("runtime.fusion_threshold"), "default");
}

TEST(ConfigTypes, EveryTypeFromAFile) {
  Config config = load_text(
      "[runtime]\n"
      "fusion_threshold = \"64MiB\"\n"
      "cycle_time = \"250us\"\n"
      "cache_capacity = 0\n"
      "peer_timeout = 5\n"
      "heartbeat_interval = 0.25\n"
      "autotune = true\n"
      "autotune_log = \"/tmp/tune.csv\"\n"
      "[log]\n"
      "level = \"DEBUG\"\n"
      "[plugins]\n"
      "search_path = [\"/opt/a\", \"/opt/b\"]\n"
      "[transport]\n"
      "intra = [\"cma\", \"shm\"]\n"
      "inter = \"ofi\"\n"
      "[stall_check]\n"
      "shutdown_time = \"2m\"\n",
      {}, "my.toml");
  EXPECT_EQ(config.get_bytes("runtime.fusion_threshold"), 64u << 20);
  EXPECT_EQ(config.get_duration("runtime.cycle_time"), nanoseconds(250000));
  EXPECT_EQ(config.get_int("runtime.cache_capacity"), 0);
  EXPECT_EQ(config.get_float("runtime.cache_capacity"), 0.0);
  EXPECT_EQ(config.get_duration("runtime.peer_timeout"),
            nanoseconds(5000000000));
  EXPECT_EQ(config.get_duration("runtime.heartbeat_interval"),
            nanoseconds(250000000));
  EXPECT_TRUE(config.get_bool("runtime.autotune"));
  EXPECT_EQ(config.get_string("runtime.autotune_log"), "/tmp/tune.csv");
  EXPECT_EQ(config.get_string("log.level"), "debug");
  EXPECT_EQ(config.get_strings("plugins.search_path"),
            (std::vector<std::string>{"/opt/a", "/opt/b"}));
  EXPECT_EQ(config.get_strings("transport.intra"),
            (std::vector<std::string>{"cma", "shm"}));
  EXPECT_EQ(config.get_string("transport.intra"), "cma");
  EXPECT_EQ(config.get_strings("transport.inter"),
            std::vector<std::string>{"ofi"});
  EXPECT_EQ(config.get_duration("stall_check.shutdown_time"),
            nanoseconds(120000000000));

  EXPECT_NE(config.file().find("my.toml"), std::string::npos);
  EXPECT_EQ(config.source("runtime.fusion_threshold"), config.file() + ":2:1");
  EXPECT_EQ(config.source("transport.inter"), config.file() + ":15:1");
  EXPECT_EQ(config.source("runtime.spin_time"), "default");
}

TEST(ConfigTypes, SizesAsIntegersAndDottedKeys) {
  Config config = load_text("runtime.fusion_threshold = 4096\n");
  EXPECT_EQ(config.get_bytes("runtime.fusion_threshold"), 4096u);
}

TEST(ConfigTypes, EntriesShowValueAndSource) {
  Config config = load_text("[runtime]\nfusion_threshold = 65536\n");
  bool seen = false;
  std::string previous;
  for (const Config::Entry& e : config.entries()) {
    EXPECT_LT(previous, e.key);
    previous = e.key;
    if (e.key == "runtime.fusion_threshold") {
      seen = true;
      EXPECT_EQ(e.value, "\"64KiB\"");
      EXPECT_EQ(e.source, config.file() + ":2:1");
    }
    if (e.key == "runtime.cycle_time") {
      EXPECT_EQ(e.value, "\"1ms\"");
    }
    if (e.key == "reducer.load") {
      EXPECT_EQ(e.value,
                "[\"ring\", \"tree\", \"halving-doubling\", \"adasum\", "
                "\"native\"]");
    }
  }
  EXPECT_TRUE(seen);
}

TEST(ConfigTypes, MisusedGetterIsAnInternalError) {
  Config config;
  try {
    config.get_bool("runtime.fusion_treshold");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_INTERNAL);
  }
  try {
    config.get_int("runtime.autotune");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("get_int"), std::string::npos);
  }
}

}  // namespace
}  // namespace hvd
