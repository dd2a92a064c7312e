#include "options.h"

#include "common/config_reader.h"

namespace hvd_nccl {

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(host, {"device", "timeout"});
  Options o;
  o.device = static_cast<int32_t>(reader.integer("device", o.device, -1, 1023));
  o.timeout = reader.duration("timeout", o.timeout);
  return o;
}

}  // namespace hvd_nccl
