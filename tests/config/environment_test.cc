// Horovod's environment variables override the file, each onto one key,
// in Horovod's units, with the variable as the source.
#include <gtest/gtest.h>

#include "config_test_support.h"

namespace hvd {
namespace {

using std::chrono::nanoseconds;
using testing::Environment;
using ::testing::HasSubstr;
using testing::load_error;
using testing::load_text;

Config with_env(const Environment& env) {
  ConfigLoadOptions options;
  options.environment = &env;
  testing::TempDir dir;  // no horovod.toml anywhere
  options.working_directory = dir.path();
  options.system_directory = dir.path();
  return Config::load(options);
}

TEST(ConfigEnvironment, OverridesTheFileWithTheVariableAsSource) {
  Config config = load_text("[runtime]\nfusion_threshold = \"1MiB\"\n",
                            {{"HOROVOD_FUSION_THRESHOLD", "33554432"}});
  EXPECT_EQ(config.get_bytes("runtime.fusion_threshold"), 32u << 20);
  EXPECT_EQ(config.source("runtime.fusion_threshold"),
            "HOROVOD_FUSION_THRESHOLD");
}

TEST(ConfigEnvironment, HorovodUnits) {
  Config config = with_env({
      {"HOROVOD_CYCLE_TIME", "5"},  // milliseconds
      {"HOROVOD_SPIN_TIME_US", "20"},
      {"HOROVOD_PEER_TIMEOUT_SECONDS", "3"},
      {"HOROVOD_START_TIMEOUT", "120"},
      {"HOROVOD_STALL_CHECK_TIME_SECONDS", "0.5"},
      {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "2m"},  // a unit wins
      {"HOROVOD_CACHE_CAPACITY", "7"},
  });
  EXPECT_EQ(config.get_duration("runtime.cycle_time"), nanoseconds(5000000));
  EXPECT_EQ(config.get_duration("runtime.spin_time"), nanoseconds(20000));
  EXPECT_EQ(config.get_duration("runtime.peer_timeout"),
            nanoseconds(3000000000));
  EXPECT_EQ(config.get_duration("runtime.start_timeout"),
            nanoseconds(120000000000));
  EXPECT_EQ(config.get_duration("stall_check.warning_time"),
            nanoseconds(500000000));
  EXPECT_EQ(config.get_duration("stall_check.shutdown_time"),
            nanoseconds(120000000000));
  EXPECT_EQ(config.get_int("runtime.cache_capacity"), 7);
  EXPECT_EQ(config.source("runtime.cycle_time"), "HOROVOD_CYCLE_TIME");
}

TEST(ConfigEnvironment, BooleansStringsAndLists) {
  Config config = with_env({
      {"HOROVOD_AUTOTUNE", "1"},
      {"HOROVOD_HIERARCHICAL_ALLREDUCE", "true"},
      {"HOROVOD_STALL_CHECK_DISABLE", "1"},
      {"HOROVOD_LOG_LEVEL", "INFO"},
      {"HOROVOD_LOG_HIDE_TIME", "0"},
      {"HOROVOD_TIMELINE", "/tmp/t.json"},
      {"HOROVOD_PLUGIN_PATH", "/opt/a::/opt/b"},
      {"HOROVOD_CPU_OPERATIONS", "Gloo"},
      {"HOROVOD_AUTOTUNE_LOG", ""},  // empty: not set
  });
  EXPECT_TRUE(config.get_bool("runtime.autotune"));
  EXPECT_TRUE(config.get_bool("runtime.hierarchical_allreduce"));
  EXPECT_FALSE(config.get_bool("stall_check.enabled"));
  EXPECT_EQ(config.source("stall_check.enabled"),
            "HOROVOD_STALL_CHECK_DISABLE");
  EXPECT_EQ(config.get_string("log.level"), "info");
  EXPECT_FALSE(config.get_bool("log.hide_time"));
  EXPECT_EQ(config.source("log.hide_time"), "HOROVOD_LOG_HIDE_TIME");
  EXPECT_EQ(config.get_string("timeline.path"), "/tmp/t.json");
  EXPECT_EQ(config.get_strings("plugins.search_path"),
            (std::vector<std::string>{"/opt/a", "/opt/b"}));
  EXPECT_EQ(config.get_strings("transport.inter"),
            std::vector<std::string>{"gloo"});
  EXPECT_EQ(config.source("transport.inter"), "HOROVOD_CPU_OPERATIONS");
  EXPECT_EQ(config.source("runtime.autotune_log"), "default");
}

TEST(ConfigEnvironment, PluginKeysGoToTheirPluginsTable) {
  Config config =
      load_text("[transport.tcp]\ninterfaces = [\"lo\"]\nport = 1\n",
                {{"HOROVOD_NETWORK_INTERFACES", "eth0, eth1"},
                 {"HOROVOD_GLOO_TIMEOUT_SECONDS", "45"}});
  const hvd_config_table* tcp = config.plugin_table("transport", "tcp");
  ASSERT_EQ(tcp->count, 2u);
  const hvd_config_value& interfaces = tcp->values[0];
  EXPECT_STREQ(interfaces.key, "interfaces");
  ASSERT_EQ(interfaces.type, HVD_VALUE_ARRAY);
  ASSERT_EQ(interfaces.item_count, 2u);
  EXPECT_STREQ(interfaces.items[0].string_value, "eth0");
  EXPECT_STREQ(interfaces.items[1].string_value, "eth1");
  EXPECT_STREQ(interfaces.source, "HOROVOD_NETWORK_INTERFACES");
  EXPECT_STREQ(tcp->values[1].key, "port");
  EXPECT_EQ(tcp->values[1].source, config.file() + ":3:1");

  const hvd_config_table* gloo = config.plugin_table("transport", "gloo");
  ASSERT_EQ(gloo->count, 1u);
  EXPECT_STREQ(gloo->values[0].key, "timeout");
  EXPECT_STREQ(gloo->values[0].string_value, "45s");
  EXPECT_STREQ(gloo->values[0].source, "HOROVOD_GLOO_TIMEOUT_SECONDS");
  EXPECT_EQ(config.source("transport.gloo.timeout"),
            "HOROVOD_GLOO_TIMEOUT_SECONDS");
}

TEST(ConfigEnvironment, BadValueNamesTheVariable) {
  std::string e = load_error("", {{"HOROVOD_CYCLE_TIME", "fast"}});
  EXPECT_THAT(e, HasSubstr("HOROVOD_CYCLE_TIME=\"fast\": key "
                           "'runtime.cycle_time': expected a number of "
                           "milliseconds"));
  e = load_error("", {{"HOROVOD_AUTOTUNE", "maybe"}});
  EXPECT_THAT(e, HasSubstr("HOROVOD_AUTOTUNE=\"maybe\": key "
                           "'runtime.autotune': expected 1 or 0"));
  e = load_error("", {{"HOROVOD_CACHE_CAPACITY", "-3"}});
  EXPECT_THAT(e, HasSubstr("HOROVOD_CACHE_CAPACITY"));
  e = load_error("", {{"HOROVOD_LOG_LEVEL", "loud"}});
  EXPECT_THAT(e, HasSubstr("HOROVOD_LOG_LEVEL=\"loud\": key 'log.level': "
                           "unknown value"));
  e = load_error("", {{"HOROVOD_FUSION_THRESHOLD", "big"}});
  EXPECT_THAT(e, HasSubstr("HOROVOD_FUSION_THRESHOLD=\"big\""));
}

}  // namespace
}  // namespace hvd
