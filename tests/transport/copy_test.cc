// The streaming copy the shm transport and the core share, for every
// alignment of source and destination and sizes around the thresholds of
// its prologue, its loops and shm's use of it.
#include "shm/copy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "horovod_plugin/stream_copy.h"

namespace {

TEST(StreamCopy, EveryAlignmentAndSize) {
  const size_t sizes[] = {
      0,   1,    31,   32,   63,   64,    127,   128,
      129, 4095, 4096, 4097, 8191, 65536, 65539, (1u << 20) + 3};
  std::vector<uint8_t> src((1u << 20) + 256), dst((1u << 20) + 256);
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  for (size_t size : sizes) {
    for (size_t s_off : {0, 1, 7, 16, 33, 63}) {
      for (size_t d_off : {0, 3, 8, 31, 32, 61}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        hvd_plugin::stream_copy(dst.data() + d_off, src.data() + s_off, size);
        ASSERT_EQ(std::memcmp(dst.data() + d_off, src.data() + s_off, size), 0)
            << "size " << size << " src+" << s_off << " dst+" << d_off;
        for (size_t i = 0; i < d_off; ++i) ASSERT_EQ(dst[i], 0xEE);
        for (size_t i = d_off + size; i < dst.size(); ++i) {
          ASSERT_EQ(dst[i], 0xEE) << "wrote past the end, size " << size;
        }
      }
    }
  }
}

TEST(StreamCopy, CopyBytesEitherWay) {
  std::vector<uint8_t> src(10000), a(10000), b(10000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i);
  hvd_shm::copy_bytes(a.data(), src.data(), src.size(), false);
  hvd_shm::copy_bytes(b.data(), src.data(), src.size(), true);
  EXPECT_EQ(a, src);
  EXPECT_EQ(b, src);
}

}  // namespace
