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
  // Waiting, not yet for the shutdown time: listed after the others.
  EXPECT_GT(v.shutdown.find("'fine'"), v.shutdown.find("also waiting:"))
      << v.shutdown;
  EXPECT_NE(v.shutdown.find("also waiting:"), std::string::npos);
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

TEST(StallInspector, SaysWhereEachMissingRankIs) {
  // Rank 0 removes a set while rank 1 waits in a barrier: each op names
  // the call the other rank is in.
  StallInspector s(1s, 3s);
  Clock::time_point t0 = Clock::now();
  const std::vector<int32_t> two = {0, 1};
  s.submitted(0, two, "hvd.process_set.remove.0", 0, t0,
              "hvd_remove_process_set(1)");
  s.submitted(0, two, "barrier.0", 1, t0, "barrier");
  StallInspector::Verdict v = s.check(t0 + 4s);
  EXPECT_NE(v.shutdown.find("hvd_remove_process_set(1) "
                            "'hvd.process_set.remove.0': missing ranks 1 "
                            "(submitted by ranks 0, waiting 4.0 s); rank 1 "
                            "waits in barrier 'barrier.0'"),
            std::string::npos)
      << v.shutdown;
  EXPECT_NE(v.shutdown.find("barrier 'barrier.0': missing ranks 0 (submitted "
                            "by ranks 1, waiting 4.0 s); rank 0 waits in "
                            "hvd_remove_process_set(1)"),
            std::string::npos)
      << v.shutdown;
}

TEST(StallInspector, NamesARankThatSubmittedNothing) {
  StallInspector s(1s, 0s);
  Clock::time_point t0 = Clock::now();
  s.submitted(0, {0, 1}, "x", 0, t0, "allreduce");
  std::string w = s.check(t0 + 2s).warning;
  EXPECT_NE(w.find("rank 1 has submitted nothing that waits"),
            std::string::npos)
      << w;
}

TEST(StallInspector, AJoinedRankIsNotMissingAndAJoinCanStall) {
  StallInspector s(1s, 0s);
  Clock::time_point t0 = Clock::now();
  const std::vector<int32_t> three = {0, 1, 2};
  s.joined(0, three, 2, t0);
  s.submitted(0, three, "grad", 0, t0, "allreduce");
  std::string w = s.check(t0 + 2s).warning;
  EXPECT_NE(w.find("allreduce 'grad': missing ranks 1 (submitted by ranks 0; "
                   "joined: ranks 2"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("join: missing ranks 0, 1 (joined by ranks 2"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("rank 0 waits in allreduce 'grad'"), std::string::npos) << w;
  s.joins_resolved(0);
  s.resolved(0, "grad");
  EXPECT_EQ(s.pending(), 0u);
}

}  // namespace
}  // namespace hvd::runtime
