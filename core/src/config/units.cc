#include "config/units.h"

#include <strings.h>

#include <cctype>
#include <string_view>

#include "config/config.h"

namespace hvd {
namespace {

using u128 = unsigned __int128;

struct Unit {
  const char* name;
  u128 multiplier;
};

constexpr u128 kKi = 1024;
constexpr Unit kByteUnits[] = {
    {"", 1},
    {"B", 1},
    {"KB", 1000},
    {"MB", 1000000},
    {"GB", 1000000000},
    {"TB", 1000000000000},
    {"KiB", kKi},
    {"MiB", kKi* kKi},
    {"GiB", kKi* kKi* kKi},
    {"TiB", kKi* kKi* kKi* kKi},
};

// A missing unit means seconds.
constexpr Unit kDurationUnits[] = {
    {"", 1000000000},     {"ns", 1},
    {"us", 1000},         {"\u00b5s", 1000},
    {"ms", 1000000},      {"s", 1000000000},
    {"m", 60000000000},   {"min", 60000000000},
    {"h", 3600000000000},
};

// Parses "<digits>[.<digits>][ ]<unit>" exactly: the value is
// digits * multiplier / 10^fraction_digits and must come out whole.
template <size_t N>
bool parse_with_units(const std::string& text, const Unit (&units)[N],
                      u128 limit, u128* out) {
  std::string_view s(text);
  while (!s.empty() && isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  u128 digits = 0;
  int digit_count = 0, fraction_digits = 0;
  bool in_fraction = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (!isdigit(static_cast<unsigned char>(c))) break;
    if (++digit_count > 24) return false;  // keeps the products in 128 bits
    digits = digits * 10 + static_cast<u128>(c - '0');
    if (in_fraction) ++fraction_digits;
  }
  if (digit_count == 0) return false;
  std::string_view unit = s.substr(i);
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  for (const Unit& u : units) {
    std::string_view name(u.name);
    if (name.size() != unit.size() ||
        strncasecmp(name.data(), unit.data(), unit.size()) != 0)
      continue;
    u128 scale = 1;
    for (int k = 0; k < fraction_digits; ++k) scale *= 10;
    u128 value = digits * u.multiplier;
    if (value % scale != 0) return false;
    value /= scale;
    if (value > limit) return false;
    *out = value;
    return true;
  }
  return false;
}

std::string with_largest_unit(u128 value, const Unit* units, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    if (value % units[k].multiplier == 0) {
      return std::to_string(
                 static_cast<uint64_t>(value / units[k].multiplier)) +
             units[k].name;
    }
  }
  return std::to_string(static_cast<uint64_t>(value));
}

}  // namespace

bool parse_bytes(const std::string& text, uint64_t* out) {
  u128 value;
  if (!parse_with_units(text, kByteUnits, UINT64_MAX, &value)) return false;
  *out = static_cast<uint64_t>(value);
  return true;
}

bool parse_duration(const std::string& text, std::chrono::nanoseconds* out) {
  u128 value;
  if (!parse_with_units(text, kDurationUnits, INT64_MAX, &value)) return false;
  *out = std::chrono::nanoseconds(static_cast<int64_t>(value));
  return true;
}

std::string format_bytes(uint64_t bytes) {
  static const Unit binary[] = {{"TiB", kKi * kKi * kKi * kKi},
                                {"GiB", kKi * kKi * kKi},
                                {"MiB", kKi * kKi},
                                {"KiB", kKi}};
  if (bytes == 0) return "0";
  return with_largest_unit(bytes, binary, 4);
}

std::string format_duration(std::chrono::nanoseconds duration) {
  static const Unit units[] = {
      {"s", 1000000000}, {"ms", 1000000}, {"us", 1000}, {"ns", 1}};
  if (duration.count() <= 0) return "0s";
  return with_largest_unit(static_cast<u128>(duration.count()), units, 4);
}

}  // namespace hvd
