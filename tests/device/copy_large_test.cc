// copy_large at odd sizes and alignments on both sides of the streaming
// threshold: every byte copied, nothing outside the destination touched.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "device/device.h"

namespace hvd::test {
namespace {

TEST(CopyLarge, EverySizeAndAlignment) {
  const size_t t = copy_large_threshold() == SIZE_MAX ? size_t(4) << 20
                                                      : copy_large_threshold();
  const size_t sizes[] = {0, 1, 63, 64, 65, 4095, t - 1, t, t + 1, t + 12345};
  const size_t src_offsets[] = {0, 1, 17, 63};
  const size_t dst_offsets[] = {0, 5, 32, 63};
  const size_t guard = 64;
  std::vector<uint8_t> src(t + 12345 + 64);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = (uint8_t)(i * 2654435761u >> 13);
  std::vector<uint8_t> dst(src.size() + 2 * guard);
  for (size_t bytes : sizes) {
    for (size_t so : src_offsets) {
      for (size_t doff : dst_offsets) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        uint8_t* d = dst.data() + guard + doff;
        copy_large(d, src.data() + so, bytes);
        ASSERT_TRUE(std::equal(d, d + bytes, src.data() + so))
            << bytes << " bytes, src+" << so << ", dst+" << doff;
        ASSERT_TRUE(
            std::all_of(dst.data(), d, [](uint8_t b) { return b == 0xEE; }))
            << "wrote before dst: " << bytes << " bytes";
        ASSERT_TRUE(std::all_of(d + bytes, dst.data() + dst.size(),
                                [](uint8_t b) { return b == 0xEE; }))
            << "wrote past dst: " << bytes << " bytes";
      }
    }
  }
}

TEST(CopyLarge, OverlapBehavesAsMemmove) {
  const size_t n = copy_large_threshold() == SIZE_MAX
                       ? size_t(1) << 20
                       : copy_large_threshold() + 100;
  std::vector<uint32_t> v(n / 4 + 16);
  std::iota(v.begin(), v.end(), 0u);
  std::vector<uint32_t> expected = v;
  std::copy_backward(expected.begin(), expected.begin() + n / 4,
                     expected.begin() + n / 4 + 3);
  copy_large(v.data() + 3, v.data(), n / 4 * 4);
  EXPECT_EQ(v, expected);
}

}  // namespace
}  // namespace hvd::test
