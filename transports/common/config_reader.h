// Reads a transport's own table ([transport.<name>], handed over in
// hvd_host.config) against the keys the transport knows. An unknown key or a
// value of the wrong shape is reported through host->config_error (the core
// words it with file, line and column) and then thrown as a Failure with
// HVD_ERR_CONFIG, so init() fails with the transport's own message too.
#pragma once

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "horovod/host.h"
#include "horovod_plugin/boundary.h"

namespace hvd_transport_common {

// "64MiB", "1.5GB", "4096", "4K" -> bytes (binary units for KiB/K, decimal
// for KB). false on bad text.
inline bool parse_size(const std::string& text, uint64_t* out) {
  const char* begin = text.c_str();
  char* end = nullptr;
  double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number) || number < 0) return false;
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  for (char& ch : unit) ch = static_cast<char>(std::tolower(ch));
  double scale = 0;
  struct Unit {
    const char* name;
    double scale;
  };
  static const Unit units[] = {{"", 1},
                               {"b", 1},
                               {"k", 1024.0},
                               {"kib", 1024.0},
                               {"kb", 1e3},
                               {"m", 1048576.0},
                               {"mib", 1048576.0},
                               {"mb", 1e6},
                               {"g", 1073741824.0},
                               {"gib", 1073741824.0},
                               {"gb", 1e9},
                               {"t", 1099511627776.0},
                               {"tib", 1099511627776.0},
                               {"tb", 1e12}};
  for (const Unit& u : units) {
    if (unit == u.name) scale = u.scale;
  }
  double bytes = number * scale;
  if (scale == 0 || bytes >= 18446744073709551615.0) return false;
  *out = static_cast<uint64_t>(bytes);
  return true;
}

// "30s", "500ms", "2m", "1h", or a bare number of seconds -> milliseconds.
// false on bad text.
inline bool parse_duration(const std::string& text,
                           std::chrono::milliseconds* out) {
  const char* begin = text.c_str();
  char* end = nullptr;
  double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number) || number < 0) return false;
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  struct Unit {
    const char* name;
    double ms;
  };
  static const Unit units[] = {{"", 1e3},    {"s", 1e3}, {"ms", 1.0},
                               {"us", 1e-3}, {"m", 6e4}, {"min", 6e4},
                               {"h", 3.6e6}};
  for (const Unit& u : units) {
    if (unit != u.name) continue;
    double ms = number * u.ms;
    if (ms > 1e12) return false;
    *out = std::chrono::milliseconds(static_cast<int64_t>(std::llround(ms)));
    return true;
  }
  return false;
}

class ConfigReader {
 public:
  // Rejects every key of the table that is not in `known`.
  ConfigReader(const hvd_host* host, std::initializer_list<const char*> known)
      : host_(host), known_(known.begin(), known.end()) {
    const hvd_config_table* table = host_->config;
    if (table == nullptr) return;
    if (table->name != nullptr) name_ = table->name;
    for (size_t i = 0; i < table->count; ++i) {
      const hvd_config_value& value = table->values[i];
      bool ok = false;
      for (const std::string& key : known_) ok = ok || key == value.key;
      if (!ok) {
        std::string list;
        for (const std::string& key : known_) {
          list += (list.empty() ? "" : ", ") + key;
        }
        reject(value.key, "unknown key (known keys: " + list + ")");
      }
    }
  }

  // A size ("1MiB" or an integer number of bytes) in [min, max].
  uint64_t size(const char* key, uint64_t fallback, uint64_t min,
                uint64_t max) const {
    const hvd_config_value* v = find(key);
    if (v == nullptr) return fallback;
    uint64_t bytes = 0;
    if (v->type == HVD_VALUE_INT && v->int_value >= 0) {
      bytes = static_cast<uint64_t>(v->int_value);
    } else if (v->type != HVD_VALUE_STRING || v->string_value == nullptr ||
               !parse_size(v->string_value, &bytes)) {
      reject(key, "expected a size such as \"1MiB\" or a number of bytes");
    }
    if (bytes < min || bytes > max) {
      reject(key, "must be between " + std::to_string(min) + " and " +
                      std::to_string(max) + " bytes");
    }
    return bytes;
  }

  int64_t integer(const char* key, int64_t fallback, int64_t min,
                  int64_t max) const {
    const hvd_config_value* v = find(key);
    if (v == nullptr) return fallback;
    int64_t value = v->int_value;
    if (v->type == HVD_VALUE_STRING && v->string_value != nullptr) {
      // An environment variable arrives as text.
      char* end = nullptr;
      value = std::strtoll(v->string_value, &end, 10);
      if (end == v->string_value || *end != '\0') {
        reject(key, "expected an integer");
      }
    } else if (v->type != HVD_VALUE_INT) {
      reject(key, "expected an integer");
    }
    if (value < min || value > max) {
      reject(key, "must be between " + std::to_string(min) + " and " +
                      std::to_string(max));
    }
    return value;
  }

  // A positive duration: "30s", "500ms", or a number of seconds (an integer,
  // a float, or text from an environment variable).
  std::chrono::milliseconds duration(const char* key,
                                     std::chrono::milliseconds fallback) const {
    const hvd_config_value* v = find(key);
    if (v == nullptr) return fallback;
    std::chrono::milliseconds ms{0};
    bool ok = false;
    if (v->type == HVD_VALUE_INT) {
      ok = v->int_value > 0 && v->int_value < 1000000000;
      ms = std::chrono::seconds(ok ? v->int_value : 0);
    } else if (v->type == HVD_VALUE_FLOAT) {
      ok = parse_duration(std::to_string(v->float_value), &ms);
    } else if (v->type == HVD_VALUE_STRING && v->string_value != nullptr) {
      ok = parse_duration(v->string_value, &ms);
    }
    if (!ok || ms.count() <= 0) {
      reject(key,
             "expected a positive duration such as \"30s\" or a number of "
             "seconds");
    }
    return ms;
  }

  // The limit every transport has on requests in flight per connection.
  uint32_t max_requests(uint32_t fallback) const {
    return static_cast<uint32_t>(integer("max_requests", fallback, 1, 1 << 20));
  }

  // One non-empty string; `expected` says what was wanted when the value is
  // something else.
  std::string text(const char* key, const std::string& fallback,
                   const char* expected) const {
    const hvd_config_value* v = find(key);
    if (v == nullptr) return fallback;
    if (v->type != HVD_VALUE_STRING || v->string_value == nullptr ||
        v->string_value[0] == '\0') {
      reject(key, expected);
    }
    return v->string_value;
  }

  // One of `choices` (as text()).
  std::string choice(const char* key, const std::string& fallback,
                     std::initializer_list<const char*> choices) const {
    std::string expected;
    for (const char* c : choices) {
      expected +=
          std::string(expected.empty() ? "expected \"" : " or \"") + c + "\"";
    }
    std::string value = text(key, fallback, expected.c_str());
    for (const char* c : choices) {
      if (value == c) return value;
    }
    reject(key, expected);
  }

  // A comma-separated string or an array of strings; empty entries dropped.
  std::vector<std::string> list(const char* key) const {
    std::vector<std::string> out;
    const hvd_config_value* v = find(key);
    if (v == nullptr) return out;
    auto split = [&](const char* text) {
      std::string item;
      for (const char* p = text;; ++p) {
        if (*p == ',' || *p == '\0') {
          while (!item.empty() && item.back() == ' ') item.pop_back();
          if (!item.empty()) out.push_back(item);
          item.clear();
          if (*p == '\0') break;
        } else if (*p != ' ' || !item.empty()) {
          item += *p;
        }
      }
    };
    if (v->type == HVD_VALUE_STRING && v->string_value != nullptr) {
      split(v->string_value);
    } else if (v->type == HVD_VALUE_ARRAY) {
      for (size_t i = 0; i < v->item_count; ++i) {
        const hvd_config_value& item = v->items[i];
        if (item.type != HVD_VALUE_STRING || item.string_value == nullptr) {
          reject(key, "expected strings");
        }
        split(item.string_value);
      }
    } else {
      reject(key, "expected a comma-separated string or an array of strings");
    }
    return out;
  }

  [[noreturn]] void reject(const char* key, const std::string& message) const {
    hvd_status status = HVD_ERR_CONFIG;
    if (host_->config_error != nullptr) {
      status = host_->config_error(host_->ctx, key, message.c_str());
      if (status == HVD_OK) status = HVD_ERR_CONFIG;
    }
    hvd_plugin::fail(status, "[" + name_ + "] key '" + key + "': " + message);
  }

 private:
  const hvd_config_value* find(const char* key) const {
    const hvd_config_table* table = host_->config;
    if (table == nullptr) return nullptr;
    for (size_t i = 0; i < table->count; ++i) {
      if (std::string(table->values[i].key) == key) return &table->values[i];
    }
    return nullptr;
  }

  const hvd_host* host_;
  std::vector<std::string> known_;
  std::string name_ = "transport";
};

}  // namespace hvd_transport_common
