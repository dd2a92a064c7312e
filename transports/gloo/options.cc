#include "options.h"

#include "common/config_reader.h"

namespace hvd_gloo {

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(
      host, {"interface", "timeout", "max_requests"});
  Options o;
  std::vector<std::string> iface = reader.list("interface");
  if (iface.size() > 1) {
    reader.reject("interface", "expected one interface name, e.g. \"lo\"");
  }
  if (!iface.empty()) o.interface = iface.front();
  o.max_requests = reader.max_requests(o.max_requests);
  o.timeout = reader.duration("timeout", o.timeout);
  return o;
}

}  // namespace hvd_gloo
