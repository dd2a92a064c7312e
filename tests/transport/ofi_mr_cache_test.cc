// The ofi transport's registration cache (transports/ofi/mr_cache.h) over a
// real libfabric domain (tcp;ofi_rxm on loopback), planned as for a provider
// with FI_MR_LOCAL: hits, least-recently-used eviction, pinned entries kept,
// the caller's own region preferred, keys unique without FI_MR_PROV_KEY.
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "ofi/endpoint_plan.h"
#include "ofi/mr_cache.h"

namespace {

using hvd_ofi::MrCache;
using hvd_ofi::Registration;

class OfiMrCache : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FI_TCP_IFACE", "lo", 0);
    fi_info* hints = fi_allocinfo();
    hints->caps = FI_TAGGED;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup("tcp");
    int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info_);
    fi_freeinfo(hints);
    ASSERT_EQ(rc, 0) << fi_strerror(-rc);
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
    plan_.register_local = true;  // as efa with FI_MR_LOCAL, verbs
    plan_.provider_keys = false;
  }
  void TearDown() override {
    if (domain_ != nullptr) fi_close(&domain_->fid);
    if (fabric_ != nullptr) fi_close(&fabric_->fid);
    if (info_ != nullptr) fi_freeinfo(info_);
  }

  static uint64_t key_of(const Registration* r) { return fi_mr_key(r->mr); }

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  hvd_ofi::EndpointPlan plan_;
  std::vector<char> memory_ = std::vector<char>(1 << 20);
  char* at(size_t offset) { return memory_.data() + offset; }
};

TEST_F(OfiMrCache, SameBufferHitsTheCache) {
  MrCache cache(domain_, nullptr, plan_, 4);
  Registration* a = nullptr;
  Registration* b = nullptr;
  void* desc_a = cache.descriptor(nullptr, at(0), 4096, &a);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->pins, 1u);
  // A part of a cached range is served by it too.
  void* desc_b = cache.descriptor(nullptr, at(1024), 1024, &b);
  EXPECT_EQ(b, a);
  EXPECT_EQ(desc_b, desc_a);
  EXPECT_EQ(a->pins, 2u);
  cache.unpin(a);
  cache.unpin(b);
  EXPECT_EQ(a->pins, 0u);
}

TEST_F(OfiMrCache, LeastRecentlyUsedUnpinnedEntryGoesFirst) {
  MrCache cache(domain_, nullptr, plan_, 2);
  Registration* first = nullptr;
  Registration* second = nullptr;
  Registration* again = nullptr;
  cache.descriptor(nullptr, at(0), 4096, &first);
  cache.descriptor(nullptr, at(8192), 4096, &second);
  uint64_t first_key = key_of(first);
  uint64_t second_key = key_of(second);
  EXPECT_NE(first_key, second_key);  // our keys, unique
  cache.unpin(first);
  cache.unpin(second);
  // Touch the first, so the second is the least recently used.
  cache.descriptor(nullptr, at(0), 4096, &again);
  EXPECT_EQ(key_of(again), first_key);
  cache.unpin(again);
  Registration* third = nullptr;
  cache.descriptor(nullptr, at(16384), 4096, &third);  // evicts the second
  cache.unpin(third);
  Registration* back = nullptr;
  cache.descriptor(nullptr, at(0), 4096, &back);
  EXPECT_EQ(key_of(back), first_key);  // kept
  cache.unpin(back);
  cache.descriptor(nullptr, at(8192), 4096, &back);
  EXPECT_NE(key_of(back), second_key);  // registered anew
  cache.unpin(back);
}

TEST_F(OfiMrCache, PinnedEntriesAreNeverEvicted) {
  MrCache cache(domain_, nullptr, plan_, 1);
  Registration* held = nullptr;
  Registration* other = nullptr;
  cache.descriptor(nullptr, at(0), 4096, &held);
  uint64_t held_key = key_of(held);
  cache.descriptor(nullptr, at(8192), 4096, &other);  // over capacity
  EXPECT_NE(other, held);
  Registration* check = nullptr;
  cache.descriptor(nullptr, at(0), 4096, &check);
  EXPECT_EQ(key_of(check), held_key);  // still registered
  cache.unpin(check);
  cache.unpin(other);
  cache.unpin(held);
}

TEST_F(OfiMrCache, TheCallersRegionIsUsedWhenItCovers) {
  MrCache cache(domain_, nullptr, plan_, 4);
  Registration* own = cache.register_region(at(0), 65536, {HVD_MEM_HOST, 0});
  ASSERT_NE(own->mr, nullptr);
  Registration* pinned = nullptr;
  EXPECT_EQ(cache.descriptor(own, at(4096), 4096, &pinned), own->desc());
  EXPECT_EQ(pinned, nullptr);  // nothing taken from the cache
  // Past its end the cache serves instead.
  EXPECT_NE(cache.descriptor(own, at(60000), 8192, &pinned), nullptr);
  EXPECT_NE(pinned, nullptr);
  cache.unpin(pinned);
  cache.deregister(own);
}

TEST_F(OfiMrCache, WithoutMrLocalHostMemoryIsNotRegistered) {
  plan_.register_local = false;  // tcp, shm, efa without FI_MR_LOCAL
  MrCache cache(domain_, nullptr, plan_, 4);
  Registration* pinned = nullptr;
  EXPECT_EQ(cache.descriptor(nullptr, at(0), 4096, &pinned), nullptr);
  EXPECT_EQ(pinned, nullptr);
  Registration* own = cache.register_region(at(0), 4096, {HVD_MEM_HOST, 0});
  EXPECT_EQ(own->mr, nullptr);
  cache.deregister(own);
}

TEST_F(OfiMrCache, ZeroBytesNeedNoDescriptor) {
  MrCache cache(domain_, nullptr, plan_, 4);
  Registration* pinned = nullptr;
  EXPECT_EQ(cache.descriptor(nullptr, at(0), 0, &pinned), nullptr);
  EXPECT_EQ(pinned, nullptr);
}

}  // namespace
