#include "bootstrap_world.h"

#include <unistd.h>

#include <cstdio>

namespace hvd_conformance {

BootstrapWorld::BootstrapWorld(const hvd::Config& config,
                               const std::string& plugin_name)
    : bootstrap_(hvd::Bootstrap::create(config)) {
  hvd::HostServicesOptions options;
  options.kind = HVD_PLUGIN_TRANSPORT;
  options.name = plugin_name;
  options.config = &config;
  options.bootstrap = bootstrap_.get();
  services_ = std::make_unique<hvd::HostServices>(options);
}

int BootstrapWorld::rank() const { return bootstrap_->rank(); }
int BootstrapWorld::size() const { return bootstrap_->size(); }
const hvd_host* BootstrapWorld::host() { return services_->table(); }

void BootstrapWorld::put(const std::string& key, const Bytes& value) {
  bootstrap_->put(key, value);
}

Bytes BootstrapWorld::get(int rank, const std::string& key,
                          std::chrono::milliseconds timeout) {
  return bootstrap_->get(rank, key, timeout);
}

void BootstrapWorld::die(const std::function<void()>&) {
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(0);  // as a crash would: no destructors, no goodbyes
}

}  // namespace hvd_conformance
