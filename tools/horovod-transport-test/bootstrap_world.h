// The suite's world over processes started by horovodrun (or mpirun, srun):
// the core's Bootstrap for rank, size and exchanges, and the host table the
// core would hand the plugin (HostServices).
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"
#include "config/config.h"
#include "plugin/host_services.h"
#include "world.h"

namespace hvd_conformance {

class BootstrapWorld : public World {
 public:
  // `plugin_name` selects the [transport.<name>] table for the host table.
  BootstrapWorld(const hvd::Config& config, const std::string& plugin_name);
  int rank() const override;
  int size() const override;
  const hvd_host* host() override;
  void put(const std::string& key, const Bytes& value) override;
  Bytes get(int rank, const std::string& key,
            std::chrono::milliseconds timeout) override;
  [[noreturn]] void die(const std::function<void()>& release) override;

 private:
  std::unique_ptr<hvd::Bootstrap> bootstrap_;
  std::unique_ptr<hvd::HostServices> services_;
};

}  // namespace hvd_conformance
