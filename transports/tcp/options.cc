#include "options.h"

#include <algorithm>

#include "addresses.h"
#include "common/config_reader.h"
#include "sockets.h"

namespace hvd_tcp {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(
      host, {"streams", "split_threshold", "max_requests", "congestion_control",
             "interfaces"});
  Options o;
  o.streams = static_cast<uint32_t>(
      reader.integer("streams", o.streams, 1, kMaxStreams));
  o.split_threshold =
      reader.size("split_threshold", o.split_threshold, 4096, UINT64_MAX);
  o.max_requests = reader.max_requests(o.max_requests);
  o.congestion_control =
      reader.text("congestion_control", o.congestion_control,
                  "expected \"auto\", \"system\" or the name of an algorithm");
  if (o.congestion_control != "auto" && o.congestion_control != "system") {
    std::vector<std::string> known = congestion_controls();
    if (!known.empty() && std::find(known.begin(), known.end(),
                                    o.congestion_control) == known.end()) {
      reader.reject("congestion_control",
                    "the kernel has no algorithm '" + o.congestion_control +
                        "' (have: " + joined(known) + ")");
    }
  }
  o.interfaces = reader.list("interfaces");
  for (const std::string& name : o.interfaces) {
    if (interface_addresses(name).empty()) {
      reader.reject("interfaces", "no interface '" + name +
                                      "' with an address here (have: " +
                                      joined(interface_names()) + ")");
    }
  }
  return o;
}

}  // namespace hvd_tcp
