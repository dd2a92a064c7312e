#include "options.h"

#include <cstdlib>

#include "common/config_reader.h"

namespace hvd_ofi {

namespace {

// A duration as an integer number of milliseconds or text such as "5s",
// "250ms", "1m".
uint64_t duration_ms(const hvd_transport_common::ConfigReader& reader,
                     const hvd_host* host, const char* key, uint64_t fallback) {
  const hvd_config_table* table = host->config;
  const hvd_config_value* v = nullptr;
  for (size_t i = 0; table != nullptr && i < table->count; ++i) {
    if (std::string(table->values[i].key) == key) v = &table->values[i];
  }
  if (v == nullptr) return fallback;
  if (v->type == HVD_VALUE_INT && v->int_value > 0) {
    return static_cast<uint64_t>(v->int_value);
  }
  if (v->type == HVD_VALUE_STRING && v->string_value != nullptr) {
    char* end = nullptr;
    double number = std::strtod(v->string_value, &end);
    std::string unit(end);
    double scale = unit == "ms"                  ? 1
                   : unit == "s" || unit.empty() ? 1000
                   : unit == "m"                 ? 60000
                   : unit == "us"                ? 0.001
                                                 : -1;
    if (end != v->string_value && number > 0 && scale > 0 &&
        number * scale >= 1) {
      return static_cast<uint64_t>(number * scale);
    }
  }
  reader.reject(key, "expected a duration such as \"5s\" or \"250ms\"");
}

}  // namespace

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(
      host, {"provider", "max_requests", "peer_timeout", "ping_interval",
             "mr_cache_entries"});
  Options o;
  const hvd_config_table* table = host->config;
  for (size_t i = 0; table != nullptr && i < table->count; ++i) {
    const hvd_config_value& v = table->values[i];
    if (std::string(v.key) != "provider") continue;
    if (v.type != HVD_VALUE_STRING || v.string_value == nullptr ||
        v.string_value[0] == '\0') {
      reader.reject("provider",
                    "expected a provider name such as \"tcp\", \"efa\", "
                    "\"shm\" or \"verbs;ofi_rxm\"");
    }
    o.provider = v.string_value;
  }
  o.max_requests = static_cast<uint32_t>(
      reader.integer("max_requests", o.max_requests, 1, 1 << 20));
  o.peer_timeout_ms =
      duration_ms(reader, host, "peer_timeout", o.peer_timeout_ms);
  o.ping_interval_ms =
      duration_ms(reader, host, "ping_interval", o.ping_interval_ms);
  if (o.ping_interval_ms >= o.peer_timeout_ms) {
    reader.reject("ping_interval", "must be shorter than peer_timeout");
  }
  o.mr_cache_entries = static_cast<uint32_t>(
      reader.integer("mr_cache_entries", o.mr_cache_entries, 1, 1 << 16));
  return o;
}

}  // namespace hvd_ofi
