// Until core/src/config builds hvd_config: the few Config members the
// bootstrap and its tests use, reading only [bootstrap] backend from the
// file and HOROVOD_START_TIMEOUT (seconds). Not built once hvd_config exists.
#include <cstdlib>
#include <fstream>
#include <regex>

#include "common/error.h"
#include "config/config.h"

namespace hvd {

struct Config::Impl {
  std::string file;
  std::string backend = "auto";
  std::string backend_source = "default";
  std::chrono::nanoseconds start_timeout = std::chrono::seconds(30);
};

Config::Config() : impl_(std::make_shared<Impl>()) {}

Config Config::load(const ConfigLoadOptions& options) {
  auto impl = std::make_shared<Impl>();
  if (!options.path.empty()) {
    impl->file = options.path;
    std::ifstream in(options.path);
    std::string line;
    std::regex backend(R"(^\s*backend\s*=\s*\"([^\"]*)\")");
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (std::regex_search(line, m, backend)) {
        impl->backend = m[1];
        impl->backend_source = options.path + ":" + std::to_string(n) + ":1";
      }
    }
  }
  if (const char* t = getenv("HOROVOD_START_TIMEOUT")) {
    impl->start_timeout = std::chrono::seconds(atoi(t));
  }
  Config config;
  config.impl_ = impl;
  return config;
}

const std::string& Config::file() const { return impl_->file; }

std::string Config::get_string(const std::string& key) const {
  if (key == "bootstrap.backend") return impl_->backend;
  throw Error(HVD_ERR_INTERNAL, "config stand-in: no key " + key);
}

std::chrono::nanoseconds Config::get_duration(const std::string& key) const {
  if (key == "runtime.start_timeout") return impl_->start_timeout;
  throw Error(HVD_ERR_INTERNAL, "config stand-in: no key " + key);
}

std::string Config::source(const std::string& key) const {
  if (key == "bootstrap.backend") return impl_->backend_source;
  return "default";
}

}  // namespace hvd
