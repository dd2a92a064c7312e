#include "runtime/planner.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

hvd_score_range range(uint64_t lo, uint64_t hi, int32_t score) {
  hvd_score_range r{};
  r.struct_size = sizeof r;
  r.min_bytes = lo;
  r.max_bytes = hi;
  r.score = score;
  return r;
}

std::vector<ReducerScores> two() {
  // tree wins small messages, ring large ones.
  return {{"ring", {range(0, UINT64_MAX, 10), range(65536, UINT64_MAX, 50)}},
          {"tree", {range(0, 65536, 40)}}};
}

TEST(Planner, HighestScoreFirst) {
  EXPECT_EQ(rank_candidates({}, two(), 100), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(rank_candidates({}, two(), 1 << 20), (std::vector<size_t>{0}));
  EXPECT_EQ(score_for(two()[0], 1 << 20), 50);
}

TEST(Planner, FirstMatchingRuleDecides) {
  std::vector<ReducerRule> rules(2);
  rules[0].max_bytes = 1024;
  rules[0].reducer = "ring";
  rules[1].reducer = "tree";
  EXPECT_EQ(rank_candidates(rules, two(), 100), (std::vector<size_t>{0, 1}));
  // tree scores 0 at 1 MiB, but the rule puts it first anyway.
  EXPECT_EQ(rank_candidates(rules, two(), 1 << 20),
            (std::vector<size_t>{1, 0}));
}

TEST(Planner, RangesAreHalfOpen) {
  std::vector<ReducerRule> rules(1);
  rules[0].min_bytes = 10;
  rules[0].max_bytes = 20;
  rules[0].reducer = "tree";
  EXPECT_EQ(rank_candidates(rules, two(), 20)[0], 1u);  // score: tree 40
  EXPECT_EQ(rank_candidates(rules, two(), 65536)[0], 0u);
  EXPECT_EQ(rank_candidates(rules, two(), 10)[0], 1u);
}

TEST(Planner, TiesKeepLoadOrderAndZeroIsNotOffered) {
  std::vector<ReducerScores> r = {{"a", {range(0, UINT64_MAX, 5)}},
                                  {"b", {range(0, UINT64_MAX, 5)}},
                                  {"c", {range(0, UINT64_MAX, 0)}},
                                  {"d", {}}};
  EXPECT_EQ(rank_candidates({}, r, 7), (std::vector<size_t>{0, 1}));
}

}  // namespace
}  // namespace hvd::runtime
