// The control plane's settings from the configuration (kept apart so the
// rest of the room builds and tests without it).
#include <cstdlib>
#include <sstream>

#include "bootstrap/bootstrap.h"
#include "config/config.h"
#include "control/control_plane.h"

namespace hvd {

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::string> configured_interfaces(const hvd_config_table& table) {
  for (size_t i = 0; i < table.count; ++i) {
    const hvd_config_value& value = table.values[i];
    if (std::string(value.key) != "interfaces") continue;
    if (value.type == HVD_VALUE_STRING) return split_commas(value.string_value);
    std::vector<std::string> names;
    if (value.type == HVD_VALUE_ARRAY)
      for (size_t j = 0; j < value.item_count; ++j)
        if (value.items[j].type == HVD_VALUE_STRING)
          names.push_back(value.items[j].string_value);
    return names;
  }
  return {};
}

}  // namespace

ControlPlaneOptions control_plane_options(const Config& config) {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  using std::chrono::milliseconds;
  ControlPlaneOptions options;
  options.peer_timeout =
      duration_cast<milliseconds>(config.get_duration("runtime.peer_timeout"));
  options.heartbeat_interval = duration_cast<milliseconds>(
      config.get_duration("runtime.heartbeat_interval"));
  options.start_timeout =
      duration_cast<milliseconds>(config.get_duration("runtime.start_timeout"));
  options.spin_time =
      duration_cast<microseconds>(config.get_duration("runtime.spin_time"));
  if (const char* job = std::getenv("HOROVOD_JOB_ID")) options.job_id = job;
  // The tcp transport's interfaces (HOROVOD_NETWORK_INTERFACES, horovodrun
  // --network-interfaces, [transport.tcp] interfaces) are the ones this job
  // may use.
  options.interfaces =
      configured_interfaces(*config.plugin_table("transport", "tcp"));
  if (options.interfaces.empty())
    if (const char* names = std::getenv("HOROVOD_NETWORK_INTERFACES"))
      options.interfaces = split_commas(names);
  return options;
}

namespace {

ControlPlaneOptions with_epoch(ControlPlaneOptions options, uint64_t epoch) {
  options.epoch = epoch;
  return options;
}

}  // namespace

ControlPlane::ControlPlane(Bootstrap& bootstrap, const Config& config)
    : ControlPlane(bootstrap,
                   with_epoch(control_plane_options(config), bootstrap.epoch())) {}

}  // namespace hvd
