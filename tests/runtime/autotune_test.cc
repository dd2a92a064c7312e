#include "runtime/autotune.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

namespace hvd::runtime {
namespace {

using namespace std::chrono_literals;

TuneSetting defaults() {
  TuneSetting s;
  s.fusion_threshold = 128ull << 20;
  s.cycle_time = 1ms;
  return s;
}

// Drives the tuner with a job whose cycles each move `bytes_per_cycle` in
// a time that depends on the setting; returns the setting it settled on.
TuneSetting run(
    Autotuner& tuner,
    const std::function<std::chrono::nanoseconds(const TuneSetting&)>&
        cycle_cost,
    int max_cycles = 10000) {
  auto now = Autotuner::Clock::time_point{} + 1s;
  TuneSetting current = tuner.current();
  for (int i = 0; i < max_cycles && !tuner.settled(); ++i) {
    now += cycle_cost(current);
    if (i % 3 == 0) tuner.note_cycle(0, now);  // idle cycles do not count
    if (auto next = tuner.note_cycle(1 << 20, now)) current = *next;
  }
  return current;
}

TEST(Autotuner, SettlesOnTheFastestSetting) {
  Autotuner::Options options;
  options.min_sample = 1ms;
  Autotuner tuner(defaults(), {"ring", "tree"}, options, "");
  auto cost = [](const TuneSetting& s) {
    std::chrono::nanoseconds t = 100us;
    if (s.fusion_threshold == (16ull << 20)) t -= 40us;
    if (s.cycle_time == 250us) t -= 10us;
    if (s.reducer == "tree") t -= 5us;
    return t;
  };
  TuneSetting settled = run(tuner, cost);
  ASSERT_TRUE(tuner.settled());
  EXPECT_EQ(settled.fusion_threshold, 16ull << 20);
  EXPECT_EQ(settled.cycle_time, 250us);
  EXPECT_EQ(settled.reducer, "tree");
  EXPECT_EQ(tuner.current(), settled);
}

TEST(Autotuner, KeepsTheDefaultsWhenNothingIsFaster) {
  Autotuner::Options options;
  options.min_sample = 1ms;
  Autotuner tuner(defaults(), {"ring"}, options, "");
  auto cost = [](const TuneSetting& s) {
    return s == defaults() ? 50us : std::chrono::nanoseconds(80us);
  };
  EXPECT_EQ(run(tuner, cost), defaults());
  EXPECT_TRUE(tuner.settled());
}

TEST(Autotuner, LogsEverySampleAsCsv) {
  char path[] = "/tmp/hvd-autotune-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    Autotuner::Options options;
    options.min_sample = 1ms;
    Autotuner tuner(defaults(), {"ring", "tree"}, options, path);
    run(tuner, [](const TuneSetting&) { return 100us; });
    ASSERT_TRUE(tuner.settled());
  }
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  unlink(path);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "sample,stage,fusion_threshold_bytes,cycle_time_ms,reducer,bytes,"
            "seconds,bytes_per_second");
  // 6 thresholds, 2 more cycle times, 2 reducers, then the settled line.
  EXPECT_EQ(lines.size(), 1u + 6 + 2 + 2 + 1);
  EXPECT_EQ(lines[1].rfind("1,fusion_threshold,134217728,1,,", 0), 0u)
      << lines[1];
  EXPECT_NE(lines.back().find(",settled,"), std::string::npos) << lines.back();
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    std::stringstream fields(lines[i]);
    std::string field;
    int count = 0;
    while (std::getline(fields, field, ',')) ++count;
    EXPECT_EQ(count, 8) << lines[i];
  }
}

TEST(Autotuner, AnUnwritableLogIsAnError) {
  EXPECT_THROW(Autotuner(defaults(), {}, Autotuner::Options{},
                         "/nonexistent-dir/autotune.csv"),
               std::exception);
}

}  // namespace
}  // namespace hvd::runtime
