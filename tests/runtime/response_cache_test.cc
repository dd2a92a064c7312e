#include "runtime/response_cache.h"

#include <gtest/gtest.h>

#include "runtime/messages.h"

namespace hvd::runtime {
namespace {

Request request(const std::string& name, std::vector<int64_t> shape = {4},
                hvd_collective collective = HVD_COLL_ALLREDUCE) {
  Request q;
  q.name = name;
  q.collective = collective;
  q.dtype = HVD_FLOAT32;
  q.shapes = {shape};
  return q;
}

Response response(const std::string& name, std::vector<int64_t> shape = {4},
                  hvd_collective collective = HVD_COLL_ALLREDUCE) {
  Response r;
  r.collective = collective;
  r.dtype = HVD_FLOAT32;
  r.reducer = "ring";
  r.entries.push_back(Entry{name, {shape}, {}});
  return r;
}

uint32_t bit_of(const ResponseCache& cache, const std::string& name) {
  uint32_t bit = 0;
  EXPECT_EQ(cache.lookup(request(name), 0, &bit), ResponseCache::Lookup::kHit)
      << name;
  return bit;
}

TEST(ResponseCache, HitAfterPutMissBefore) {
  ResponseCache cache(8);
  uint32_t bit = 99;
  EXPECT_EQ(cache.lookup(request("a"), 0, &bit), ResponseCache::Lookup::kMiss);
  cache.put(response("a"));
  EXPECT_EQ(cache.lookup(request("a"), 0, &bit), ResponseCache::Lookup::kHit);
  EXPECT_EQ(bit, 0u);
  EXPECT_EQ(cache.at(bit).entries[0].name, "a");
  EXPECT_TRUE(cache.at(bit).reducer.empty());  // chosen per fused response
  EXPECT_EQ(cache.lookup(request("b"), 0, &bit), ResponseCache::Lookup::kMiss);
}

TEST(ResponseCache, FusedResponseIsCachedPerEntry) {
  ResponseCache cache(8);
  Response fused = response("a");
  fused.entries.push_back(Entry{"b", {{7}}, {}});
  cache.put(fused);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(bit_of(cache, "a"), 0u);
  uint32_t bit = 0;
  EXPECT_EQ(cache.lookup(request("b", {7}), 0, &bit),
            ResponseCache::Lookup::kHit);
  EXPECT_EQ(bit, 1u);
  EXPECT_EQ(cache.at(1).entries.size(), 1u);
}

TEST(ResponseCache, ChangedRequestIsStale) {
  ResponseCache cache(8);
  cache.put(response("a", {4}));
  uint32_t bit = 99;
  EXPECT_EQ(cache.lookup(request("a", {5}), 0, &bit),
            ResponseCache::Lookup::kStale);
  EXPECT_EQ(bit, 0u);
  Request other_dtype = request("a");
  other_dtype.dtype = HVD_FLOAT64;
  EXPECT_EQ(cache.lookup(other_dtype, 0, &bit), ResponseCache::Lookup::kStale);
  Request scaled = request("a");
  scaled.postscale = 0.5;
  EXPECT_EQ(cache.lookup(scaled, 0, &bit), ResponseCache::Lookup::kStale);
  Request other_set = request("a");
  other_set.process_set = 1;
  EXPECT_EQ(cache.lookup(other_set, 0, &bit), ResponseCache::Lookup::kMiss);
  // Invalidation: erased, the name misses until negotiated again.
  cache.erase(0);
  EXPECT_EQ(cache.lookup(request("a", {5}), 0, &bit),
            ResponseCache::Lookup::kMiss);
  cache.put(response("a", {5}));
  EXPECT_EQ(cache.lookup(request("a", {5}), 0, &bit),
            ResponseCache::Lookup::kHit);
}

TEST(ResponseCache, AllgatherComparesThisRanksFirstDimension) {
  ResponseCache cache(8);
  Response r = response("g", {3, 2}, HVD_COLL_ALLGATHER);
  r.entries[0].per_rank = {{3, 5}};  // rank 0 sent 3 rows, rank 1 five
  cache.put(r);
  uint32_t bit = 0;
  EXPECT_EQ(cache.lookup(request("g", {3, 2}, HVD_COLL_ALLGATHER), 0, &bit),
            ResponseCache::Lookup::kHit);
  EXPECT_EQ(cache.lookup(request("g", {5, 2}, HVD_COLL_ALLGATHER), 1, &bit),
            ResponseCache::Lookup::kHit);
  EXPECT_EQ(cache.lookup(request("g", {4, 2}, HVD_COLL_ALLGATHER), 1, &bit),
            ResponseCache::Lookup::kStale);
  EXPECT_EQ(cache.lookup(request("g", {5, 3}, HVD_COLL_ALLGATHER), 1, &bit),
            ResponseCache::Lookup::kStale);
}

TEST(ResponseCache, OnlyDataResponsesOfCacheableCollectives) {
  ResponseCache cache(8);
  cache.put(response("t", {4}, HVD_COLL_ALLTOALL));
  Response error = response("e");
  error.kind = ResponseKind::kError;
  cache.put(error);
  Response barrier = response("b", {}, HVD_COLL_BARRIER);
  barrier.kind = ResponseKind::kBarrier;
  cache.put(barrier);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(ResponseCache, EvictsLeastRecentlyUsedAndReusesItsBit) {
  ResponseCache cache(2);
  cache.put(response("a"));
  cache.put(response("b"));
  cache.touch(bit_of(cache, "a"));  // b is now the least recently used
  cache.put(response("c"));
  uint32_t bit = 0;
  EXPECT_EQ(cache.lookup(request("b"), 0, &bit), ResponseCache::Lookup::kMiss);
  EXPECT_EQ(bit_of(cache, "a"), 0u);
  EXPECT_EQ(bit_of(cache, "c"), 1u);  // b's bit
  EXPECT_EQ(cache.bit_count(), 2u);
}

TEST(ResponseCache, SameChangesGiveTheSameCacheOnEveryRank) {
  // What every rank does with the response lists of a job: the same puts,
  // touches and erases in the same order. Each rank looks up its own
  // request, and all must find the same bits.
  std::vector<ResponseCache> ranks(3, ResponseCache(5));
  for (int step = 0; step < 20; ++step) {
    for (auto& cache : ranks) {
      cache.put(response("t" + std::to_string(step % 7)));
      if (step % 3 == 0 && cache.in_use(1)) cache.touch(1);
      if (step % 5 == 4 && cache.in_use(2)) cache.erase(2);
    }
    for (int t = 0; t < 7; ++t) {
      std::string name = "t" + std::to_string(t);
      uint32_t bit0 = 0;
      auto found0 = ranks[0].lookup(request(name), 0, &bit0);
      for (size_t r = 1; r < ranks.size(); ++r) {
        uint32_t bit = 0;
        auto found =
            ranks[r].lookup(request(name), static_cast<int32_t>(r), &bit);
        ASSERT_EQ(found, found0) << "step " << step << " " << name;
        if (found != ResponseCache::Lookup::kMiss) {
          EXPECT_EQ(bit, bit0);
        }
      }
    }
  }
  EXPECT_LE(ranks[0].size(), 5u);
}

TEST(ResponseCache, CapacityZeroCachesNothing) {
  ResponseCache cache(0);
  cache.put(response("a"));
  uint32_t bit = 0;
  EXPECT_EQ(cache.lookup(request("a"), 0, &bit), ResponseCache::Lookup::kMiss);
}

TEST(ResponseCache, EraseProcessSet) {
  ResponseCache cache(8);
  cache.put(response("a"));
  Response in_set = response("a");
  in_set.process_set = 2;
  cache.put(in_set);
  cache.erase_process_set(2);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(bit_of(cache, "a"), 0u);
}

TEST(ResponseCache, BitVectors) {
  std::vector<uint64_t> words;
  set_bit(words, 3);
  set_bit(words, 130);
  EXPECT_EQ(words.size(), 3u);
  EXPECT_TRUE(test_bit(words, 3));
  EXPECT_TRUE(test_bit(words, 130));
  EXPECT_FALSE(test_bit(words, 4));
  EXPECT_FALSE(test_bit(words, 1000));
}

TEST(Messages, CachedResponsesTravelAsBits) {
  ResponseList list;
  list.cache_erase = {4};
  list.tuned = true;
  list.fusion_threshold = 1024;
  list.cycle_time_ns = 5000;
  list.reducer = "ring";
  Response cached;
  cached.process_set = 1;
  cached.reducer = "tree";
  cached.cache_bits = {2, 0};
  list.responses.push_back(cached);
  list.responses.push_back(response("fresh"));
  std::vector<uint8_t> bytes;
  encode(list, bytes);
  ResponseList back = decode_responses(bytes);
  ASSERT_EQ(back.responses.size(), 2u);
  EXPECT_EQ(back.responses[0].cache_bits, (std::vector<uint32_t>{2, 0}));
  EXPECT_EQ(back.responses[0].reducer, "tree");
  EXPECT_EQ(back.responses[0].process_set, 1);
  EXPECT_TRUE(back.responses[0].entries.empty());
  EXPECT_EQ(back.responses[1].entries[0].name, "fresh");
  EXPECT_EQ(back.cache_erase, (std::vector<uint32_t>{4}));
  EXPECT_TRUE(back.tuned);
  EXPECT_EQ(back.fusion_threshold, 1024u);
  EXPECT_EQ(back.cycle_time_ns, 5000);
  EXPECT_EQ(back.reducer, "ring");

  RequestList requests;
  set_bit(requests.cache_hits, 70);
  set_bit(requests.cache_stale, 1);
  encode(requests, bytes);
  RequestList q = decode_requests(bytes);
  EXPECT_TRUE(test_bit(q.cache_hits, 70));
  EXPECT_TRUE(test_bit(q.cache_stale, 1));
}

}  // namespace
}  // namespace hvd::runtime
