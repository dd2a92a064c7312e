// Which horovod.toml is read: explicit path, HOROVOD_CONFIG, ./horovod.toml,
// the user's config folder, the system's, else defaults.
#include <gtest/gtest.h>

#include "config_test_support.h"

namespace hvd {
namespace {

using testing::Environment;
using testing::TempDir;

// Each candidate location holds a file naming itself in timeline.path.
class ConfigSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    explicit_file_ = dir_.write("explicit.toml", file_for("explicit"));
    env_file_ = dir_.write("env.toml", file_for("env"));
    dir_.write("work/horovod.toml", file_for("work"));
    dir_.write("xdg/horovod/horovod.toml", file_for("xdg"));
    dir_.write("home/.config/horovod/horovod.toml", file_for("home"));
    dir_.write("etc/horovod.toml", file_for("etc"));
    options_.working_directory = dir_.path() + "/work";
    options_.system_directory = dir_.path() + "/etc";
    env_ = {{"HOROVOD_CONFIG", env_file_},
            {"XDG_CONFIG_HOME", dir_.path() + "/xdg"},
            {"HOME", dir_.path() + "/home"}};
    options_.environment = &env_;
  }

  static std::string file_for(const std::string& name) {
    return "[timeline]\npath = \"" + name + "\"\n";
  }

  std::string chosen() {
    Config config = Config::load(options_);
    std::string name = config.get_string("timeline.path");
    return name.empty() ? "defaults" : name;
  }

  void remove(const std::string& relative) {
    std::filesystem::remove(dir_.path() + "/" + relative);
  }

  TempDir dir_;
  std::string explicit_file_, env_file_;
  Environment env_;
  ConfigLoadOptions options_;
};

TEST_F(ConfigSearch, InOrder) {
  options_.path = explicit_file_;
  EXPECT_EQ(chosen(), "explicit");
  options_.path.clear();
  EXPECT_EQ(chosen(), "env");
  env_.erase("HOROVOD_CONFIG");
  EXPECT_EQ(chosen(), "work");
  remove("work/horovod.toml");
  EXPECT_EQ(chosen(), "xdg");
  env_.erase("XDG_CONFIG_HOME");
  EXPECT_EQ(chosen(), "home");
  remove("home/.config/horovod/horovod.toml");
  EXPECT_EQ(chosen(), "etc");
  remove("etc/horovod.toml");
  EXPECT_EQ(chosen(), "defaults");
}

TEST_F(ConfigSearch, RecordsWhatWasSearched) {
  env_.erase("HOROVOD_CONFIG");
  remove("work/horovod.toml");
  Config config = Config::load(options_);
  EXPECT_EQ(config.file(), dir_.path() + "/xdg/horovod/horovod.toml");
  EXPECT_EQ(config.searched(),
            (std::vector<std::string>{dir_.path() + "/work/horovod.toml",
                                      config.file()}));
  EXPECT_EQ(config.source("timeline.path"), config.file() + ":2:1");
}

TEST_F(ConfigSearch, MissingHorovodConfigIsAnError) {
  env_["HOROVOD_CONFIG"] = dir_.path() + "/nothing.toml";
  try {
    Config::load(options_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_CONFIG);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("HOROVOD_CONFIG=" + dir_.path() +
                                               "/nothing.toml: cannot read"));
  }
}

}  // namespace
}  // namespace hvd
