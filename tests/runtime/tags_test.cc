#include "p2p/tags.h"

#include <gtest/gtest.h>

namespace hvd::p2p {
namespace {

TEST(Tags, SixtyFourBitsHoldEveryField) {
  TagLayout layout(64);
  EXPECT_EQ(layout.total_bits(), 64u);
  EXPECT_EQ(layout.step_bits(), 16u);
  EXPECT_EQ(layout.sequence_bits(), 24u);
  TagFields f;
  f.process_set = 7;
  f.sequence = 123456;
  f.subteam = 3;
  f.step = 0xfffe;
  f.epoch = 5;
  TagFields back = layout.decompose(layout.compose(f));
  EXPECT_EQ(back.process_set, 7u);
  EXPECT_EQ(back.sequence, 123456u);
  EXPECT_EQ(back.subteam, 3u);
  EXPECT_EQ(back.step, 0xfffeu);
  EXPECT_EQ(back.epoch, 5u);
}

TEST(Tags, FieldsNeverOverlap) {
  TagLayout layout(64);
  TagFields only_step, only_seq;
  only_step.step = 1;
  only_seq.sequence = 1;
  EXPECT_NE(layout.compose(only_step), layout.compose(only_seq));
  TagFields all_ones;
  all_ones.process_set = ~0u;
  all_ones.sequence = ~uint64_t{0};
  all_ones.subteam = ~0u;
  all_ones.step = ~0u;
  all_ones.epoch = ~uint64_t{0};
  EXPECT_EQ(layout.compose(all_ones), ~uint64_t{0});
}

TEST(Tags, NarrowTransportsStayWithinTheirBits) {
  for (uint32_t bits : {15u, 16u, 24u, 32u, 48u, 63u}) {
    TagLayout layout(bits);
    EXPECT_EQ(layout.total_bits(), bits) << bits;
    EXPECT_GE(layout.step_bits(), 8u) << bits;
    EXPECT_GE(layout.sequence_bits(), 2u) << bits;
    TagFields f;
    f.process_set = ~0u;
    f.sequence = ~uint64_t{0};
    f.subteam = ~0u;
    f.step = 0xffff;
    f.epoch = ~uint64_t{0};
    EXPECT_LT(layout.compose(f), uint64_t{1} << bits) << bits;
    // Consecutive tasks still differ.
    TagFields a, b;
    a.sequence = 10;
    b.sequence = 11;
    EXPECT_NE(layout.compose(a), layout.compose(b)) << bits;
  }
  TagLayout fifteen(15);
  EXPECT_EQ(fifteen.step_bits(), 11u);
  EXPECT_EQ(fifteen.epoch_bits(), 0u);
}

}  // namespace
}  // namespace hvd::p2p
