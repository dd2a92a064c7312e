#include "options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "horovod_plugin/boundary.h"

using hvd_plugin::fail;

namespace hvd::reducers {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

[[noreturn]] void config_failure(const hvd_host* host, const char* key,
                                 const std::string& message) {
  const hvd_status status = host->config_error(host->ctx, key, message.c_str());
  const char* table =
      host->config != nullptr && host->config->name ? host->config->name : "";
  fail(status != HVD_OK ? status : HVD_ERR_CONFIG,
       std::string(table) + "." + key + ": " + message);
}

}  // namespace

bool parse_size(const char* text, uint64_t* bytes) {
  char* end = nullptr;
  const double number = std::strtod(text, &end);
  if (end == text || !std::isfinite(number) || number < 0) return false;
  while (*end == ' ') ++end;
  std::string unit(end);
  for (char& c : unit) c = (char)std::tolower((unsigned char)c);
  struct Unit {
    const char* name;
    double scale;
  };
  static const Unit units[] = {
      {"", 1},          {"b", 1},       {"kib", 1024.0},  {"kb", 1e3},
      {"mib", 1 << 20}, {"mb", 1e6},    {"gib", 1 << 30}, {"gb", 1e9},
      {"k", 1024.0},    {"m", 1 << 20}, {"g", 1 << 30}};
  for (const Unit& u : units) {
    if (unit == u.name) {
      const double value = number * u.scale;
      if (value >= 18446744073709551615.0 || value != std::floor(value)) {
        return false;
      }
      *bytes = (uint64_t)value;
      return true;
    }
  }
  return false;
}

void read_options(const hvd_host* host, std::initializer_list<SizeOption> sizes,
                  std::initializer_list<IntOption> ints) {
  const hvd_config_table* table = host->config;
  if (table == nullptr) return;
  for (size_t i = 0; i < table->count; ++i) {
    const hvd_config_value& v = table->values[i];
    const std::string key = v.key != nullptr ? v.key : "";
    bool known = false;
    for (const SizeOption& o : sizes) {
      if (key != o.key) continue;
      known = true;
      uint64_t bytes = 0;
      bool ok = false;
      if (v.type == HVD_VALUE_INT && v.int_value >= 0) {
        bytes = (uint64_t)v.int_value;
        ok = true;
      } else if (v.type == HVD_VALUE_STRING && v.string_value != nullptr) {
        ok = parse_size(v.string_value, &bytes);
      }
      if (!ok) {
        config_failure(host, o.key,
                       "expected a size such as \"1MiB\" or a number of bytes");
      }
      if (bytes < o.min || bytes > o.max) {
        config_failure(host, o.key,
                       "must be between " + bytes_text(o.min) + " and " +
                           bytes_text(o.max) + ", not " +
                           std::to_string(bytes) + " bytes");
      }
      *o.value = bytes;
    }
    for (const IntOption& o : ints) {
      if (key != o.key) continue;
      known = true;
      if (v.type != HVD_VALUE_INT)
        config_failure(host, o.key, "expected an integer");
      if (v.int_value < o.min || v.int_value > o.max) {
        config_failure(host, o.key,
                       "must be between " + std::to_string(o.min) + " and " +
                           std::to_string(o.max) + ", not " +
                           std::to_string(v.int_value));
      }
      *o.value = v.int_value;
    }
    if (!known) {
      std::string names, suggestion;
      size_t best = 3;
      auto consider = [&](const char* name) {
        names += names.empty() ? "" : ", ";
        names += name;
        const size_t d = edit_distance(key, name);
        if (d < best) {
          best = d;
          suggestion = name;
        }
      };
      for (const SizeOption& o : sizes) consider(o.key);
      for (const IntOption& o : ints) consider(o.key);
      config_failure(
          host, key.c_str(),
          "unknown key" +
              (suggestion.empty() ? std::string()
                                  : " (did you mean '" + suggestion + "'?)") +
              "; known keys: " + names);
    }
  }
}

void read_pipeline_options(const hvd_host* host, uint64_t* chunk_bytes,
                           int64_t* pipeline_depth) {
  read_options(host, {{"chunk_bytes", chunk_bytes, 64, uint64_t(1) << 30}},
               {{"pipeline_depth", pipeline_depth, 1, 64}});
}

}  // namespace hvd::reducers
