// The stall inspector's decisions with the time passed in: when it warns,
// what the warning names, how often it repeats, and when it shuts down.
#include "runtime/stall_inspector.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = StallInspector::Clock;

const std::vector<int32_t> kWorld = {0, 1, 2, 3};

TEST(StallInspector, QuietUntilTheWarningTime) {
  StallInspector s(10s, 0s);
  Clock::time_point t0 = Clock::now();
  s.submitted(0, kWorld, "grad.w", 0, t0);
  s.submitted(0, kWorld, "grad.w", 2, t0 + 1s);
  EXPECT_EQ(s.pending(), 1u);
  EXPECT_TRUE(s.check(t0 + 9s).warning.empty());
  StallInspector::Verdict v = s.check(t0 + 11s);
  EXPECT_TRUE(v.shutdown.empty());
  EXPECT_NE(v.warning.find("'grad.w': missing ranks 1, 3"), std::string::npos)
      << v.warning;
  EXPECT_NE(v.warning.find("submitted by ranks 0, 2"), std::string::npos)
      << v.warning;
  EXPECT_NE(v.warning.find("more than 10 s"), std::string::npos) << v.warning;
}

TEST(StallInspector, RepeatsEveryWarningTimeWhileStalled) {
  StallInspector s(10s, 0s);
  Clock::time_point t0 = Clock::now();
  s.submitted(0, kWorld, "a", 1, t0);
  EXPECT_FALSE(s.check(t0 + 10s).warning.empty());
  EXPECT_TRUE(s.check(t0 + 15s).warning.empty());
  EXPECT_FALSE(s.check(t0 + 21s).warning.empty());
  s.resolved(0, "a");
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_TRUE(s.check(t0 + 40s).warning.empty());
}

TEST(StallInspector, NamesTheProcessSetAndMapsItsRanksToTheWorld) {
  StallInspector s(1s, 0s);
  Clock::time_point t0 = Clock::now();
  s.submitted(2, {1, 3}, "x", 1, t0);  // set rank 1 is world rank 3
  std::string w = s.check(t0 + 2s).warning;
  EXPECT_NE(w.find("'x' (process set 2): missing ranks 1 (submitted by ranks "
                   "3"),
            std::string::npos)
      << w;
}

TEST(StallInspector, ShutsDownAfterTheShutdownTime) {
  StallInspector s(1s, 5s);
  Clock::time_point t0 = Clock::now();
  s.submitted(0, kWorld, "late", 0, t0);
  s.submitted(0, kWorld, "fine", 0, t0 + 3s);
  StallInspector::Verdict v = s.check(t0 + 2s);
  EXPECT_TRUE(v.shutdown.empty());
  v = s.check(t0 + 6s);
  EXPECT_NE(v.shutdown.find("'late': missing ranks 1, 2, 3"), std::string::npos)
      << v.shutdown;
  EXPECT_EQ(v.shutdown.find("'fine'"), std::string::npos) << v.shutdown;
  EXPECT_NE(v.shutdown.find("stall_check.shutdown_time"), std::string::npos);
}

TEST(StallInspector, ResolvedTensorsNeverWarn) {
  StallInspector s(1s, 2s);
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 100; ++i) {
    s.submitted(0, kWorld, "t" + std::to_string(i), 0, t0);
    s.resolved(0, "t" + std::to_string(i));
  }
  StallInspector::Verdict v = s.check(t0 + 10s);
  EXPECT_TRUE(v.warning.empty());
  EXPECT_TRUE(v.shutdown.empty());
}

TEST(StallInspector, ForgetsARemovedProcessSet) {
  StallInspector s(1s, 0s);
  Clock::time_point t0 = Clock::now();
  s.submitted(5, {0, 1}, "gone", 0, t0);
  s.submitted(0, kWorld, "kept", 0, t0);
  s.forget(5);
  EXPECT_EQ(s.pending(), 1u);
  std::string w = s.check(t0 + 2s).warning;
  EXPECT_EQ(w.find("'gone'"), std::string::npos) << w;
  EXPECT_NE(w.find("'kept'"), std::string::npos) << w;
}

}  // namespace
}  // namespace hvd::runtime
