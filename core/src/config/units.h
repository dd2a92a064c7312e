// Sizes and durations as text: parsing lives in config.h (parse_bytes,
// parse_duration); these give the canonical text back, the shortest exact
// form ("128MiB", "50us"), so equal values always print equally.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace hvd {

// "128MiB", "1KiB", "1000" (bytes that are not a whole KiB stay a number).
std::string format_bytes(uint64_t bytes);
// "1ms", "60s", "250us", "0s".
std::string format_duration(std::chrono::nanoseconds duration);

}  // namespace hvd
