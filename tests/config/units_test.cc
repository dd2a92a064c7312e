#include "config/units.h"

#include <gtest/gtest.h>

#include "config/config.h"

namespace hvd {
namespace {

using std::chrono::nanoseconds;

uint64_t bytes(const std::string& text) {
  uint64_t out = 0;
  EXPECT_TRUE(parse_bytes(text, &out)) << text;
  return out;
}

int64_t ns(const std::string& text) {
  nanoseconds out{};
  EXPECT_TRUE(parse_duration(text, &out)) << text;
  return out.count();
}

TEST(ConfigUnits, Sizes) {
  EXPECT_EQ(bytes("4096"), 4096u);
  EXPECT_EQ(bytes("0"), 0u);
  EXPECT_EQ(bytes("12B"), 12u);
  EXPECT_EQ(bytes("1KiB"), 1024u);
  EXPECT_EQ(bytes("64MiB"), 64u << 20);
  EXPECT_EQ(bytes("2GiB"), 2ull << 30);
  EXPECT_EQ(bytes("1TiB"), 1ull << 40);
  EXPECT_EQ(bytes("1KB"), 1000u);
  EXPECT_EQ(bytes("1GB"), 1000000000u);
  EXPECT_EQ(bytes("1.5GB"), 1500000000u);
  EXPECT_EQ(bytes("0.5KiB"), 512u);
  EXPECT_EQ(bytes("64 mib"), 64u << 20);
  EXPECT_EQ(bytes("18446744073709551615"), UINT64_MAX);
}

TEST(ConfigUnits, BadSizes) {
  uint64_t out;
  for (const char* text : {"", "MiB", "-1", "64MB/s", "1.1B", "64 Mi", "1e3",
                           "99999999999TiB", "18446744073709551616"}) {
    EXPECT_FALSE(parse_bytes(text, &out)) << text;
  }
}

TEST(ConfigUnits, Durations) {
  EXPECT_EQ(ns("5"), 5000000000);
  EXPECT_EQ(ns("5s"), 5000000000);
  EXPECT_EQ(ns("1ms"), 1000000);
  EXPECT_EQ(ns("250us"), 250000);
  EXPECT_EQ(ns("250\u00b5s"), 250000);
  EXPECT_EQ(ns("7ns"), 7);
  EXPECT_EQ(ns("2m"), 120000000000);
  EXPECT_EQ(ns("1h"), 3600000000000);
  EXPECT_EQ(ns("0.5ms"), 500000);
  EXPECT_EQ(ns("1.5"), 1500000000);
  EXPECT_EQ(ns("0s"), 0);
}

TEST(ConfigUnits, BadDurations) {
  nanoseconds out;
  for (const char* text : {"", "s", "-1s", "5 sec", "1.5ns", "1d", "5s5"}) {
    EXPECT_FALSE(parse_duration(text, &out)) << text;
  }
}

TEST(ConfigUnits, CanonicalText) {
  EXPECT_EQ(format_bytes(128u << 20), "128MiB");
  EXPECT_EQ(format_bytes(1536), "1536");
  EXPECT_EQ(format_bytes(1024), "1KiB");
  EXPECT_EQ(format_bytes(1000), "1000");
  EXPECT_EQ(format_bytes(0), "0");
  EXPECT_EQ(format_duration(nanoseconds(1000000)), "1ms");
  EXPECT_EQ(format_duration(nanoseconds(60000000000)), "60s");
  EXPECT_EQ(format_duration(nanoseconds(1500000)), "1500us");
  EXPECT_EQ(format_duration(nanoseconds(0)), "0s");
  // Text and value round-trip.
  for (const char* text : {"128MiB", "1536", "3GiB"})
    EXPECT_EQ(format_bytes(bytes(text)), text);
  for (const char* text : {"1ms", "60s", "250us", "7ns"})
    EXPECT_EQ(format_duration(nanoseconds(ns(text))), text);
}

}  // namespace
}  // namespace hvd
