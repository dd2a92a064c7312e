// The control plane's settings as the configuration gives them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "config/config.h"
#include "control/control_plane.h"

namespace hvd {
namespace {

using namespace std::chrono_literals;

TEST(Options, DefaultsMatchTheSchema) {
  std::map<std::string, std::string> environment;
  ConfigLoadOptions load;
  load.environment = &environment;
  load.path = "/dev/null";
  auto options = control_plane_options(Config::load(load));
  EXPECT_EQ(options.peer_timeout, 10s);
  EXPECT_EQ(options.heartbeat_interval, 1s);
  EXPECT_EQ(options.start_timeout, 30s);
  EXPECT_EQ(options.spin_time, 50us);
}

TEST(Options, ComeFromTheFileAndTheEnvironment) {
  char path[] = "/tmp/control-options-XXXXXX.toml";
  int fd = mkstemps(path, 5);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "[runtime]\n"
                         "peer_timeout = \"2s\"\n"
                         "heartbeat_interval = \"250ms\"\n"
                         "[transport.tcp]\n"
                         "interfaces = [\"lo\", \"eth7\"]\n";
  std::map<std::string, std::string> environment{
      {"HOROVOD_START_TIMEOUT", "5"}};
  ConfigLoadOptions load;
  load.path = path;
  load.environment = &environment;
  auto options = control_plane_options(Config::load(load));
  std::remove(path);
  EXPECT_EQ(options.peer_timeout, 2s);
  EXPECT_EQ(options.heartbeat_interval, 250ms);
  EXPECT_EQ(options.start_timeout, 5s);
  EXPECT_EQ(options.interfaces, (std::vector<std::string>{"lo", "eth7"}));

  std::map<std::string, std::string> variables{
      {"HOROVOD_NETWORK_INTERFACES", "lo,eth9"}};
  ConfigLoadOptions from_env;
  from_env.path = "/dev/null";
  from_env.environment = &variables;
  EXPECT_EQ(control_plane_options(Config::load(from_env)).interfaces,
            (std::vector<std::string>{"lo", "eth9"}));
}

}  // namespace
}  // namespace hvd
