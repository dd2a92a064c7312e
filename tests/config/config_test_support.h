// Helpers for the configuration tests: a temporary folder, and loading a
// TOML text with an explicit environment.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "common/error.h"
#include "config/config.h"

namespace hvd::testing {

using Environment = std::map<std::string, std::string>;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/hvd-config-test-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

  // Writes `text` to path()/name (creating folders) and returns the path.
  std::string write(const std::string& name, const std::string& text) const {
    std::string file = path_ + "/" + name;
    std::filesystem::create_directories(
        std::filesystem::path(file).parent_path());
    std::ofstream(file) << text;
    return file;
  }

 private:
  std::string path_;
};

// Loads `text` as the file `name` in a fresh folder with environment `env`.
inline Config load_text(const std::string& text, const Environment& env = {},
                        const std::string& name = "horovod.toml") {
  TempDir dir;
  ConfigLoadOptions options;
  options.path = dir.write(name, text);
  options.environment = &env;
  return Config::load(options);
}

// The message of the HVD_ERR_CONFIG that loading `text` raises; "" and a
// test failure when it loads.
inline std::string load_error(const std::string& text,
                              const Environment& env = {}) {
  try {
    TempDir dir;
    ConfigLoadOptions options;
    options.path = dir.write("horovod.toml", text);
    options.environment = &env;
    options.working_directory = dir.path();
    Config::load(options);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_CONFIG) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a configuration error for:\n" << text;
  return "";
}

}  // namespace hvd::testing
