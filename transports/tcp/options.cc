#include "options.h"

#include "addresses.h"
#include "common/config_reader.h"

namespace hvd_tcp {

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(
      host, {"streams", "split_threshold", "max_requests", "interfaces"});
  Options o;
  o.streams = static_cast<uint32_t>(
      reader.integer("streams", o.streams, 1, kMaxStreams));
  o.split_threshold =
      reader.size("split_threshold", o.split_threshold, 4096, UINT64_MAX);
  o.max_requests = reader.max_requests(o.max_requests);
  o.interfaces = reader.list("interfaces");
  for (const std::string& name : o.interfaces) {
    if (interface_addresses(name).empty()) {
      std::string known;
      for (const std::string& n : interface_names()) {
        known += (known.empty() ? "" : ", ") + n;
      }
      reader.reject("interfaces", "no interface '" + name +
                                      "' with an address here (have: " + known +
                                      ")");
    }
  }
  return o;
}

}  // namespace hvd_tcp
