#include "p2p/registration_cache.h"

#include <gtest/gtest.h>

#include "fake_transport.h"

namespace hvd::p2p {
namespace {

TEST(RegistrationCache, ReusesCoveringRegistrations) {
  hvd_transport_s* t = fake_transport(FakeOptions{});
  {
    RegistrationCache cache(fake_transport_api(), t, 4);
    std::vector<uint8_t> buf(4096);
    hvd_mr *a, *b;
    ASSERT_EQ(cache.acquire(buf.data(), 4096, {HVD_MEM_HOST, 0}, &a), HVD_OK);
    cache.release(a);
    ASSERT_EQ(cache.acquire(buf.data() + 100, 50, {HVD_MEM_HOST, 0}, &b),
              HVD_OK);
    cache.release(b);
    EXPECT_EQ(a, b);
    EXPECT_EQ(t->registrations, 1);
  }
  EXPECT_EQ(t->deregistrations, 1);
  fake_transport_api()->finalize(t);
}

TEST(RegistrationCache, EvictsLeastRecentlyUsedButNeverPinnedOrPermanent) {
  hvd_transport_s* t = fake_transport(FakeOptions{});
  {
    RegistrationCache cache(fake_transport_api(), t, 2);
    std::vector<std::vector<uint8_t>> bufs(4, std::vector<uint8_t>(64));
    ASSERT_EQ(cache.add_permanent(bufs[3].data(), 64, {HVD_MEM_HOST, 0}),
              HVD_OK);
    hvd_mr *pinned, *m;
    ASSERT_EQ(cache.acquire(bufs[0].data(), 64, {HVD_MEM_HOST, 0}, &pinned),
              HVD_OK);
    ASSERT_EQ(cache.acquire(bufs[1].data(), 64, {HVD_MEM_HOST, 0}, &m), HVD_OK);
    cache.release(m);
    // Full (2 evictable): bufs[1] goes, bufs[0] is pinned.
    ASSERT_EQ(cache.acquire(bufs[2].data(), 64, {HVD_MEM_HOST, 0}, &m), HVD_OK);
    cache.release(m);
    EXPECT_EQ(t->deregistrations, 1);
    EXPECT_EQ(cache.size(), 3u);
    cache.release(pinned);
    cache.forget(bufs[3].data(), 64);
    EXPECT_EQ(t->deregistrations, 2);
  }
  fake_transport_api()->finalize(t);
}

}  // namespace
}  // namespace hvd::p2p
