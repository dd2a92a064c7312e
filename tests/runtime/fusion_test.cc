#include "runtime/fusion.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

Response data(const std::string& name, hvd_collective c, hvd_dtype dtype,
              int64_t elements) {
  Response r;
  r.collective = c;
  r.dtype = dtype;
  Entry e;
  e.name = name;
  e.shapes = {{elements}};
  if (c == HVD_COLL_ALLGATHER) e.per_rank = {{elements, elements}};
  if (c == HVD_COLL_ALLTOALL)
    e.per_rank = {{elements / 2, elements / 2}, {0, 0}};
  r.entries.push_back(e);
  return r;
}

std::vector<std::vector<std::string>> layout(const std::vector<Response>& rs) {
  std::vector<std::vector<std::string>> out;
  for (const Response& r : rs) {
    out.emplace_back();
    for (const Entry& e : r.entries) out.back().push_back(e.name);
  }
  return out;
}

TEST(Fusion, FusesUpToTheThreshold) {
  std::vector<Response> ready;
  for (const char* n : {"a", "b", "c"}) {
    ready.push_back(data(n, HVD_COLL_ALLREDUCE, HVD_FLOAT32, 25));  // 100 B
  }
  EXPECT_EQ(layout(fuse(ready, 250, 2)),
            (std::vector<std::vector<std::string>>{{"a", "b"}, {"c"}}));
  EXPECT_EQ(layout(fuse(ready, 300, 2)),
            (std::vector<std::vector<std::string>>{{"a", "b", "c"}}));
  EXPECT_EQ(layout(fuse(ready, 0, 2)),
            (std::vector<std::vector<std::string>>{{"a"}, {"b"}, {"c"}}));
}

TEST(Fusion, OnlyLikeWithLike) {
  std::vector<Response> ready;
  ready.push_back(data("f32", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 4));
  ready.push_back(data("gather", HVD_COLL_ALLGATHER, HVD_FLOAT32, 4));
  ready.push_back(data("f64", HVD_COLL_ALLREDUCE, HVD_FLOAT64, 4));
  ready.push_back(data("f32b", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 4));
  Response max = data("max", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 4);
  max.op = HVD_OP_MAX;
  ready.push_back(max);
  Response scaled = data("scaled", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 4);
  scaled.prescale = 2;
  ready.push_back(scaled);
  ready.push_back(data("gather2", HVD_COLL_ALLGATHER, HVD_FLOAT32, 4));
  EXPECT_EQ(layout(fuse(ready, 1 << 20, 2)),
            (std::vector<std::vector<std::string>>{{"f32", "f32b"},
                                                   {"gather", "gather2"},
                                                   {"f64"},
                                                   {"max"},
                                                   {"scaled"}}));
}

TEST(Fusion, BroadcastsFuseOnlyWithTheSameRoot) {
  std::vector<Response> ready;
  for (int i = 0; i < 3; ++i) {
    Response r = data("b" + std::to_string(i), HVD_COLL_BROADCAST, HVD_INT8, 8);
    r.root = i == 1 ? 1 : 0;
    ready.push_back(r);
  }
  EXPECT_EQ(layout(fuse(ready, 1 << 20, 2)),
            (std::vector<std::vector<std::string>>{{"b0", "b2"}, {"b1"}}));
}

TEST(Fusion, NeverAlltoallErrorsBarriers) {
  std::vector<Response> ready;
  ready.push_back(data("x", HVD_COLL_ALLTOALL, HVD_FLOAT32, 4));
  ready.push_back(data("y", HVD_COLL_ALLTOALL, HVD_FLOAT32, 4));
  Response err = data("e", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 4);
  err.kind = ResponseKind::kError;
  ready.push_back(err);
  ready.push_back(data("z", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 4));
  EXPECT_EQ(
      layout(fuse(ready, 1 << 20, 2)),
      (std::vector<std::vector<std::string>>{{"x"}, {"y"}, {"e"}, {"z"}}));
}

TEST(Fusion, BytesPerCollective) {
  EXPECT_EQ(response_bytes(data("a", HVD_COLL_ALLREDUCE, HVD_FLOAT64, 10), 2),
            80u);
  // An allgather's bytes are the whole output: 10 rows from each of 2 ranks.
  EXPECT_EQ(response_bytes(data("g", HVD_COLL_ALLGATHER, HVD_FLOAT32, 10), 2),
            80u);
  Response big = data("big", HVD_COLL_ALLREDUCE, HVD_UINT8, 0);
  big.entries[0].shapes = {{3, int64_t{1} << 30}};
  EXPECT_EQ(response_bytes(big, 2), uint64_t{3} << 30);
}

TEST(Fusion, ATensorOverTheThresholdGoesAlone) {
  std::vector<Response> ready;
  ready.push_back(data("small", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 2));
  ready.push_back(data("huge", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 1000));
  ready.push_back(data("small2", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 2));
  EXPECT_EQ(layout(fuse(ready, 100, 2)), (std::vector<std::vector<std::string>>{
                                             {"small", "small2"}, {"huge"}}));
}

// The cache-bit path fuses cached responses in place, as fuse() fuses
// copies of them, and keeps each response's bits.
TEST(Fusion, CachedResponsesFuseInPlaceAsCopiesWould) {
  std::vector<Response> cache;
  cache.push_back(data("a", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 25));
  cache.push_back(data("g", HVD_COLL_ALLGATHER, HVD_FLOAT32, 4));
  cache.push_back(data("b", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 25));
  cache.push_back(data("c", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 25));
  cache.push_back(data("ada", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 1));
  cache.back().op = HVD_OP_ADASUM;
  cache.push_back(data("ada2", HVD_COLL_ALLREDUCE, HVD_FLOAT32, 1));
  cache.back().op = HVD_OP_ADASUM;
  auto at = [&](uint32_t bit) -> const Response& { return cache[bit]; };
  const std::vector<uint32_t> bits = {0, 1, 2, 3, 4, 5};
  for (uint64_t threshold : {0ull, 250ull, 1ull << 20}) {
    std::vector<Response> in_place;
    in_place.push_back(data("before", HVD_COLL_BROADCAST, HVD_INT8, 1));
    fuse_cached(bits, at, threshold, 2, in_place);
    in_place.erase(in_place.begin());
    std::vector<Response> copies;
    for (uint32_t bit : bits) {
      copies.push_back(cache[bit]);
      copies.back().cache_bits = {bit};
    }
    std::vector<Response> fused = fuse(copies, threshold, 2);
    EXPECT_EQ(layout(in_place), layout(fused)) << "threshold " << threshold;
    ASSERT_EQ(in_place.size(), fused.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_EQ(in_place[i].cache_bits, fused[i].cache_bits);
      EXPECT_EQ(in_place[i].collective, fused[i].collective);
      EXPECT_EQ(in_place[i].op, fused[i].op);
      EXPECT_EQ(in_place[i].entries[0].shapes, fused[i].entries[0].shapes);
    }
  }
  std::vector<Response> out;
  fuse_cached(bits, at, 250, 2, out);
  EXPECT_EQ(layout(out), (std::vector<std::vector<std::string>>{
                             {"a", "b"}, {"g"}, {"c"}, {"ada"}, {"ada2"}}));
  EXPECT_EQ(out[0].cache_bits, (std::vector<uint32_t>{0, 2}));
}

}  // namespace
}  // namespace hvd::runtime
