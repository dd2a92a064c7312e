#include "options.h"

#include <cctype>

#include "common/config_reader.h"

namespace hvd_ucx {

namespace {

// Keys passed on to UCX; the value is a string or a list (joined by commas).
constexpr const char* kUcxKeys[] = {"tls", "net_devices", "keepalive_interval",
                                    "rndv_thresh", "max_eager_rails"};

std::string upper(const std::string& key) {
  std::string out = key;
  for (char& ch : out) ch = static_cast<char>(std::toupper(ch));
  return out;
}

}  // namespace

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(
      host, {"max_requests", "tls", "net_devices", "keepalive_interval",
             "rndv_thresh", "max_eager_rails"});
  Options o;
  o.max_requests = reader.max_requests(o.max_requests);
  for (const char* key : kUcxKeys) {
    std::vector<std::string> items = reader.list(key);
    if (items.empty()) continue;
    std::string value;
    for (const std::string& item : items) {
      value += (value.empty() ? "" : ",") + item;
    }
    o.ucx.push_back({key, upper(key), value});
  }
  return o;
}

}  // namespace hvd_ucx
