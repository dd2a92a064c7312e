#include "runtime/core_binding.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

p2p::CpuMask mask_of(std::initializer_list<int> cpus) {
  p2p::CpuMask mask(2, 0);
  for (int cpu : cpus) mask[cpu / 8] |= static_cast<uint8_t>(1u << (cpu % 8));
  return mask;
}

TEST(CoreBinding, OneCorePerRankWhereRanksFillTheCores) {
  const p2p::CpuMask two = mask_of({0, 1});
  EXPECT_EQ(core_for_rank(two, 0, 2), 0);
  EXPECT_EQ(core_for_rank(two, 1, 2), 1);
}

TEST(CoreBinding, RanksWrapAroundTheirCores) {
  const p2p::CpuMask spread = mask_of({2, 5, 9});
  EXPECT_EQ(core_for_rank(spread, 0, 4), 2);
  EXPECT_EQ(core_for_rank(spread, 1, 4), 5);
  EXPECT_EQ(core_for_rank(spread, 2, 4), 9);
  EXPECT_EQ(core_for_rank(spread, 3, 4), 2);
}

TEST(CoreBinding, LeavesRanksAloneWithCoresToSpare) {
  EXPECT_EQ(core_for_rank(mask_of({0, 1}), 0, 1), -1);
  EXPECT_EQ(core_for_rank(mask_of({0, 1, 2, 3}), 1, 2), -1);
  EXPECT_EQ(core_for_rank(mask_of({0, 1, 2}), 1, 2), -1);
  EXPECT_EQ(core_for_rank(mask_of({3}), 0, 2), -1);  // bound already
}

}  // namespace
}  // namespace hvd::runtime
