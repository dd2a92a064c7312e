// A setting of the core's schema: its typed value and where it came from.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace hvd {

enum class ValueType {
  Bool,
  Int,  // a non-negative count
  String,
  Strings,   // an array of strings
  Names,     // a string or an array of strings (first that loads wins)
  Bytes,     // "64MiB", "1GB" or a number of bytes
  Duration,  // "5s", "1ms", "250us" or a number of seconds
};

// Strings and Names are both held as a vector.
using Value = std::variant<bool, int64_t, std::string, std::vector<std::string>,
                           uint64_t, std::chrono::nanoseconds>;

struct Setting {
  Value value;
  std::string source;  // "default", "FILE:LINE:COL" or "HOROVOD_X"
};

// "a boolean", "an array of strings", ...: what a key of `type` expects.
const char* describe_type(ValueType type);

// The value as TOML text: true, 1024, "shm", ["ring", "tree"], "128MiB",
// "1ms". Equal values give equal text.
std::string toml_text(const Value& value);
// A TOML basic string with escapes.
std::string toml_quote(const std::string& text);

}  // namespace hvd
