// Builds the hvd_host table handed to one plugin: logging prefixed with the
// plugin's description, its own configuration table, the world, bootstrap
// put/get/allgather/barrier (keys namespaced by plugin), memory, the device
// layer and the timeline hooks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "horovod/host.h"

namespace hvd {

class Bootstrap;
class Config;

// Optional timeline sink for the hooks (the runtime's timeline writer).
class TimelineHooks {
 public:
  virtual ~TimelineHooks() = default;
  virtual void begin(const std::string& row, const std::string& phase) = 0;
  virtual void end(const std::string& row, const std::string& phase) = 0;
};

struct HostServicesOptions {
  int kind = 0;      // HVD_PLUGIN_*
  std::string name;  // plugin name, for its config table and log prefix
  const Config* config = nullptr;          // required
  Bootstrap* bootstrap = nullptr;          // nullptr: bootstrap calls fail
  const hvd_device_api* device = nullptr;  // nullptr: the host device layer
  TimelineHooks* timeline = nullptr;       // nullptr: hooks do nothing
  uint64_t epoch = 0;                      // hvd_world.epoch
};

// Owns the table and everything it points to; keep it alive as long as the
// plugin instance.
class HostServices {
 public:
  explicit HostServices(HostServicesOptions options);
  ~HostServices();
  const hvd_host* table() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd
