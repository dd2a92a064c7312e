#include "runtime/coordinator.h"

#include <gtest/gtest.h>

#include "runtime/fusion.h"

namespace hvd::runtime {
namespace {

Request allreduce(const std::string& name, hvd_dtype dtype = HVD_FLOAT32,
                  std::vector<int64_t> shape = {4}) {
  Request q;
  q.name = name;
  q.collective = HVD_COLL_ALLREDUCE;
  q.dtype = dtype;
  q.shapes = {shape};
  return q;
}

std::vector<std::string> names(const std::vector<Response>& responses) {
  std::vector<std::string> out;
  for (const Response& r : responses) {
    for (const Entry& e : r.entries) out.push_back(e.name);
  }
  return out;
}

TEST(Coordinator, ReadyOnlyWhenEveryRankSubmitted) {
  Coordinator c(0, 3);
  c.submit(0, allreduce("a"));
  c.submit(2, allreduce("a"));
  EXPECT_TRUE(c.take_ready().empty());
  c.submit(1, allreduce("a"));
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kData);
  EXPECT_EQ(ready[0].entries[0].name, "a");
  EXPECT_EQ(c.pending(), 0u);
}

TEST(Coordinator, DifferentSubmissionOrdersGiveOneOrder) {
  Coordinator c(0, 3);
  // Cycle 1: every rank submits a different name first.
  c.submit(0, allreduce("a"));
  c.submit(1, allreduce("c"));
  c.submit(2, allreduce("b"));
  EXPECT_TRUE(c.take_ready().empty());
  // Cycle 2: the rest, in yet other orders.
  c.submit(0, allreduce("c"));
  c.submit(0, allreduce("b"));
  c.submit(1, allreduce("b"));
  c.submit(1, allreduce("a"));
  c.submit(2, allreduce("a"));
  c.submit(2, allreduce("c"));
  // Order of first submission: a (rank 0), c (rank 1), b (rank 2).
  EXPECT_EQ(names(c.take_ready()), (std::vector<std::string>{"a", "c", "b"}));
}

TEST(Coordinator, SameSubmissionsInAnotherOrderStillMatch) {
  for (int flip = 0; flip < 2; ++flip) {
    Coordinator c(0, 2);
    std::vector<std::string> order0 = {"x", "y", "z"};
    std::vector<std::string> order1 = {"z", "x", "y"};
    if (flip) std::swap(order0, order1);
    for (auto& n : order0) c.submit(0, allreduce(n));
    for (auto& n : order1) c.submit(1, allreduce(n));
    auto ready = c.take_ready();
    EXPECT_EQ(names(ready), order0);
  }
}

TEST(Coordinator, DtypeMismatchNamesTensorRanksAndValues) {
  Coordinator c(0, 3);
  c.submit(0, allreduce("grad", HVD_FLOAT32));
  c.submit(1, allreduce("grad", HVD_INT32));
  c.submit(2, allreduce("grad", HVD_FLOAT32));
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kError);
  EXPECT_EQ(ready[0].error_status, HVD_ERR_MISMATCH);
  const std::string& m = ready[0].error;
  EXPECT_NE(m.find("allreduce 'grad'"), std::string::npos) << m;
  EXPECT_NE(m.find("dtype"), std::string::npos) << m;
  EXPECT_NE(m.find("float32 on ranks 0, 2"), std::string::npos) << m;
  EXPECT_NE(m.find("int32 on rank 1"), std::string::npos) << m;
}

TEST(Coordinator, ShapeMismatch) {
  Coordinator c(0, 2);
  c.submit(0, allreduce("w", HVD_FLOAT32, {2, 3}));
  c.submit(1, allreduce("w", HVD_FLOAT32, {3, 2}));
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kError);
  EXPECT_NE(
      ready[0].error.find("shape [2, 3] on rank 0; shape [3, 2] on rank 1"),
      std::string::npos)
      << ready[0].error;
}

TEST(Coordinator, OpAndScaleMismatch) {
  Coordinator c(0, 2);
  Request a = allreduce("s"), b = allreduce("s");
  b.op = HVD_OP_MAX;
  c.submit(0, a);
  c.submit(1, b);
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_NE(ready[0].error.find("reduction op"), std::string::npos)
      << ready[0].error;

  Request d = allreduce("t"), e = allreduce("t");
  e.postscale = 0.5;
  c.submit(0, d);
  c.submit(1, e);
  ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_NE(ready[0].error.find("postscale 0.5 on rank 1"), std::string::npos)
      << ready[0].error;
}

TEST(Coordinator, RootMismatch) {
  Coordinator c(0, 2);
  Request a = allreduce("b"), b;
  a.collective = HVD_COLL_BROADCAST;
  b = a;
  b.root = 1;
  c.submit(0, a);
  c.submit(1, b);
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kError);
  EXPECT_NE(ready[0].error.find("root 0 on rank 0; root 1 on rank 1"),
            std::string::npos)
      << ready[0].error;
}

TEST(Coordinator, CollectiveMismatch) {
  Coordinator c(0, 2);
  Request a = allreduce("k"), b = allreduce("k");
  b.collective = HVD_COLL_ALLGATHER;
  c.submit(0, a);
  c.submit(1, b);
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kError);
  EXPECT_NE(ready[0].error.find("'k'"), std::string::npos);
  EXPECT_NE(ready[0].error.find("allreduce on rank 0; allgather on rank 1"),
            std::string::npos)
      << ready[0].error;
}

TEST(Coordinator, GroupSizeMismatch) {
  Coordinator c(0, 2);
  Request a = allreduce("g"), b = allreduce("g");
  b.shapes.push_back({4});
  c.submit(0, a);
  c.submit(1, b);
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_NE(ready[0].error.find("grouped"), std::string::npos)
      << ready[0].error;
}

// A grouped op is one request, and negotiation keeps it one entry: it is
// ready only when every rank submitted the whole group, and its tensors
// are fused (and complete) together, whatever the fusion threshold.
TEST(Coordinator, GroupIsNegotiatedAndFusedAsAUnit) {
  for (hvd_collective collective :
       {HVD_COLL_ALLREDUCE, HVD_COLL_ALLGATHER, HVD_COLL_REDUCESCATTER}) {
    Coordinator c(0, 2);
    Request group = allreduce("group", HVD_FLOAT32, {64, 2});
    group.collective = collective;
    group.shapes.push_back({32, 4});
    group.shapes.push_back({16});
    Request single = allreduce("single", HVD_FLOAT32, {64, 2});
    single.collective = collective;
    c.submit(0, group);
    c.submit(0, single);
    c.submit(1, single);
    // "single" runs; the group waits for all of rank 1's group.
    auto ready = c.take_ready();
    ASSERT_EQ(names(ready), (std::vector<std::string>{"single"}));
    c.submit(1, group);
    ready = c.take_ready();
    ASSERT_EQ(ready.size(), 1u);
    ASSERT_EQ(ready[0].kind, ResponseKind::kData);
    ASSERT_EQ(ready[0].entries.size(), 1u);
    EXPECT_EQ(ready[0].entries[0].shapes.size(), 3u);
    // Fusion moves whole entries: a threshold below the group's size (or
    // none) still runs the group as one response.
    for (uint64_t threshold : {uint64_t{0}, uint64_t{16}, uint64_t{1} << 20}) {
      std::vector<Response> in = ready;
      in.push_back(ready[0]);
      in.back().entries[0].name = "other";
      auto fused = fuse(in, threshold, 2);
      size_t with_group = 0;
      for (const Response& r : fused) {
        for (const Entry& e : r.entries) {
          if (e.name == "group") {
            ++with_group;
            EXPECT_EQ(e.shapes.size(), 3u);
          }
        }
      }
      EXPECT_EQ(with_group, 1u) << "threshold " << threshold;
    }
  }
}

TEST(Coordinator, LastToJoinIsReported) {
  Coordinator c(0, 3);
  Request join;
  join.collective = HVD_COLL_JOIN;
  join.name = "join.0";
  c.submit(2, join);
  c.submit(0, join);
  // While ranks 0 and 2 have joined, rank 1's allreduce runs alone.
  c.submit(1, allreduce("late"));
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kData);
  EXPECT_EQ(ready[0].entries[0].name, "late");
  // Only an allreduce may run with joined ranks.
  Request gather = allreduce("gathered", HVD_FLOAT32, {2, 2});
  gather.collective = HVD_COLL_ALLGATHER;
  c.submit(1, gather);
  ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kError);
  c.submit(1, join);
  ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kJoin);
  EXPECT_EQ(ready[0].last_joined, 1);
  EXPECT_EQ(c.joined(), 0);  // ready for the next round of joins
}

TEST(Coordinator, AllgatherFirstDimensionMayDiffer) {
  Coordinator c(0, 3);
  for (int r = 0; r < 3; ++r) {
    Request q = allreduce("ag", HVD_FLOAT32, {r + 1, 5});
    q.collective = HVD_COLL_ALLGATHER;
    c.submit(r, q);
  }
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  ASSERT_EQ(ready[0].kind, ResponseKind::kData);
  EXPECT_EQ(ready[0].entries[0].per_rank,
            (std::vector<std::vector<int64_t>>{{1, 2, 3}}));

  Request a = allreduce("ag2", HVD_FLOAT32, {2, 5});
  a.collective = HVD_COLL_ALLGATHER;
  Request b = a;
  b.shapes = {{2, 6}};
  c.submit(0, a);
  c.submit(1, b);
  c.submit(2, a);
  ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kError);
  EXPECT_NE(ready[0].error.find("past the first dimension"), std::string::npos)
      << ready[0].error;
}

TEST(Coordinator, AlltoallCarriesEveryRanksSplits) {
  Coordinator c(0, 2);
  Request a = allreduce("a2a", HVD_INT32, {3, 2});
  a.collective = HVD_COLL_ALLTOALL;
  a.splits = {1, 2};
  Request b = a;
  b.shapes = {{4, 2}};
  b.splits = {4, 0};
  c.submit(0, a);
  c.submit(1, b);
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].entries[0].per_rank,
            (std::vector<std::vector<int64_t>>{{1, 2}, {4, 0}}));
}

TEST(Coordinator, ARankThatCannotTakePartFailsTheOpEverywhere) {
  Coordinator c(0, 2);
  Request bad = allreduce("x");
  bad.failure_status = HVD_ERR_ABORTED;
  bad.failure = "its inputs failed";
  c.submit(0, allreduce("x"));
  c.submit(1, bad);
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kError);
  EXPECT_EQ(ready[0].error_status, HVD_ERR_ABORTED);
  EXPECT_EQ(ready[0].error,
            "allreduce 'x': rank 1 could not take part: its inputs failed");
}

TEST(Coordinator, BarrierAndJoin) {
  Coordinator c(0, 2);
  Request bar;
  bar.name = "barrier.0";
  bar.collective = HVD_COLL_BARRIER;
  c.submit(0, bar);
  EXPECT_TRUE(c.take_ready().empty());
  c.submit(1, bar);
  auto ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kBarrier);

  // Rank 1 joins: rank 0's allreduce runs without it.
  Request join;
  join.collective = HVD_COLL_JOIN;
  c.submit(1, join);
  c.submit(0, allreduce("late"));
  ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kData);
  EXPECT_EQ(ready[0].entries[0].shapes,
            (std::vector<std::vector<int64_t>>{{4}}));

  // An allgather cannot.
  Request ag = allreduce("ag");
  ag.collective = HVD_COLL_ALLGATHER;
  c.submit(0, ag);
  ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kError);
  EXPECT_NE(ready[0].error.find("joined"), std::string::npos);

  c.submit(0, join);
  ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].kind, ResponseKind::kJoin);
  EXPECT_EQ(ready[0].last_joined, 0);
  EXPECT_EQ(c.joined(), 0);
}

}  // namespace
}  // namespace hvd::runtime
