#include "runtime/fusion_layout.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace hvd::runtime {
namespace {

using In = Place::In;

Place buf(uint64_t offset) { return {In::kBuffer, 0, 0, offset}; }
Place in(uint32_t entry, uint32_t tensor = 0, uint64_t offset = 0) {
  return {In::kInput, entry, tensor, offset};
}
Place out(uint32_t entry, uint32_t tensor = 0, uint64_t offset = 0) {
  return {In::kOutput, entry, tensor, offset};
}
constexpr Place kZeros{In::kZeros, 0, 0, 0};

Response response(hvd_collective c, hvd_dtype dtype,
                  std::vector<std::vector<std::vector<int64_t>>> shapes) {
  Response r;
  r.collective = c;
  r.dtype = dtype;
  for (size_t e = 0; e < shapes.size(); ++e) {
    Entry entry;
    entry.name = "t" + std::to_string(e);
    entry.shapes = shapes[e];
    r.entries.push_back(entry);
  }
  return r;
}

Layout lay(const Response& r, int32_t rank, int32_t size,
           const std::vector<Held>& held, bool in_place) {
  Layout l;
  lay_out(r, rank, size, held, in_place, l);
  return l;
}

std::vector<Held> all_held(size_t entries) {
  return std::vector<Held>(entries, Held{true, true});
}

// Every buffer place lies on an element boundary, inside the buffer.
void expect_aligned(const Layout& l, uint64_t esize) {
  auto check = [&](const Place& p, uint64_t bytes) {
    if (p.in != In::kBuffer) return;
    EXPECT_EQ(p.offset % esize, 0u) << "offset " << p.offset;
    EXPECT_LE(p.offset + bytes, l.buffer_bytes);
  };
  for (const Copy& c : l.copy_in) check(c.to, c.bytes);
  for (const Copy& c : l.copy_out) check(c.from, c.bytes);
  check(l.send, 0);
  check(l.recv, 0);
}

TEST(FusionLayout, AllreducePacksTensorsBackToBack) {
  // Several ops, one grouped (two tensors), a prime length and an empty one.
  Response r =
      response(HVD_COLL_ALLREDUCE, HVD_FLOAT32, {{{7}}, {{0}, {2, 3}}, {{13}}});
  Layout l = lay(r, 0, 2, all_held(3), false);
  EXPECT_EQ(l.buffer_bytes, (7 + 0 + 6 + 13) * 4u);
  EXPECT_EQ(l.count, 26u);
  EXPECT_TRUE(l.moves_data);
  EXPECT_EQ(l.send, buf(0));
  EXPECT_EQ(l.recv, buf(0));
  EXPECT_EQ(l.copy_in, (std::vector<Copy>{{buf(0), in(0), 28},
                                          {buf(28), in(1, 0), 0},
                                          {buf(28), in(1, 1), 24},
                                          {buf(52), in(2), 52}}));
  EXPECT_EQ(l.copy_out, (std::vector<Copy>{{out(0), buf(0), 28},
                                           {out(1, 0), buf(28), 0},
                                           {out(1, 1), buf(28), 24},
                                           {out(2), buf(52), 52}}));
  expect_aligned(l, 4);
  EXPECT_TRUE(l.counts.empty());
}

TEST(FusionLayout, ElementSizeFollowsTheDtype) {
  for (auto [dtype, esize] : {std::pair{HVD_FLOAT16, 2u},
                              {HVD_BFLOAT16, 2u},
                              {HVD_INT8, 1u},
                              {HVD_BOOL, 1u},
                              {HVD_INT32, 4u},
                              {HVD_FLOAT64, 8u},
                              {HVD_INT64, 8u}}) {
    Response r = response(HVD_COLL_ALLREDUCE, dtype, {{{3}}, {{5, 1}}});
    Layout l = lay(r, 1, 2, all_held(2), false);
    EXPECT_EQ(l.buffer_bytes, 8 * esize) << dtype;
    EXPECT_EQ(l.count, 8u) << dtype;
    ASSERT_EQ(l.copy_in.size(), 2u);
    EXPECT_EQ(l.copy_in[1].to, buf(3 * esize)) << dtype;
    expect_aligned(l, esize);
  }
}

TEST(FusionLayout, AJoinedRankContributesZerosAndReceivesNothing) {
  Response r = response(HVD_COLL_ALLREDUCE, HVD_FLOAT64, {{{2}}, {{3}}});
  Layout l = lay(r, 0, 2, {{true, true}, {false, false}}, false);
  EXPECT_EQ(l.copy_in,
            (std::vector<Copy>{{buf(0), in(0), 16}, {buf(16), kZeros, 24}}));
  EXPECT_EQ(l.copy_out, (std::vector<Copy>{{out(0), buf(0), 16}}));
}

TEST(FusionLayout, NothingToMoveWhenEveryTensorIsEmpty) {
  Response r = response(HVD_COLL_ALLREDUCE, HVD_FLOAT32, {{{0}}, {{4, 0}}});
  Layout l = lay(r, 0, 2, all_held(2), false);
  EXPECT_EQ(l.buffer_bytes, 0u);
  EXPECT_FALSE(l.moves_data);
}

TEST(FusionLayout, InPlaceUsesTheCallersTensors) {
  Response r = response(HVD_COLL_ALLREDUCE, HVD_FLOAT32, {{{11}}});
  Layout l = lay(r, 0, 2, all_held(1), true);
  EXPECT_EQ(l.buffer_bytes, 0u);
  EXPECT_EQ(l.send, in(0));
  EXPECT_EQ(l.recv, out(0));
  EXPECT_EQ(l.count, 11u);
  EXPECT_TRUE(l.copy_in.empty());
  EXPECT_TRUE(l.copy_out.empty());
  // In place needs one held tensor.
  EXPECT_THROW(lay(r, 0, 2, {{false, false}}, true), Error);
  Response two = response(HVD_COLL_ALLREDUCE, HVD_FLOAT32, {{{1}, {1}}});
  EXPECT_THROW(lay(two, 0, 2, all_held(1), true), Error);
}

TEST(FusionLayout, BroadcastRootSendsItsInputsOthersReceive) {
  Response r = response(HVD_COLL_BROADCAST, HVD_INT32, {{{3}}, {{5}}});
  r.root = 1;
  Layout root = lay(r, 1, 3, all_held(2), false);
  EXPECT_EQ(root.copy_in,
            (std::vector<Copy>{{buf(0), in(0), 12}, {buf(12), in(1), 20}}));
  // The root's outputs come from its inputs, not through the buffer.
  EXPECT_EQ(root.copy_out,
            (std::vector<Copy>{{out(0), in(0), 12}, {out(1), in(1), 20}}));
  Layout other = lay(r, 2, 3, all_held(2), false);
  EXPECT_TRUE(other.copy_in.empty());
  EXPECT_EQ(other.copy_out,
            (std::vector<Copy>{{out(0), buf(0), 12}, {out(1), buf(12), 20}}));
  EXPECT_EQ(other.count, 8u);
  EXPECT_EQ(other.buffer_bytes, 32u);

  Response one = response(HVD_COLL_BROADCAST, HVD_INT32, {{{3}}});
  Layout direct_root = lay(one, 0, 3, all_held(1), true);
  EXPECT_EQ(direct_root.copy_in, (std::vector<Copy>{{out(0), in(0), 12}}));
  EXPECT_EQ(direct_root.send, out(0));
  EXPECT_EQ(direct_root.recv, out(0));
}

TEST(FusionLayout, AllgatherGroupsByRankThenEntry) {
  // Two ops on three ranks: rows of 2 and of 1 element, first dimensions
  // differing per rank (rank 1 has none of the first op).
  Response r = response(HVD_COLL_ALLGATHER, HVD_FLOAT32, {{{0, 2}}, {{0}}});
  r.entries[0].per_rank = {{1, 0, 3}};
  r.entries[1].per_rank = {{2, 5, 1}};
  Layout l = lay(r, 1, 3, all_held(2), false);
  EXPECT_EQ(l.counts, (std::vector<size_t>{2 + 2, 0 + 5, 6 + 1}));
  EXPECT_EQ(l.displs, (std::vector<size_t>{0, 4, 9}));
  EXPECT_EQ(l.count, 5u);  // this rank's block
  EXPECT_EQ(l.buffer_bytes, 16 * 4u);
  EXPECT_EQ(l.send, buf(16));
  EXPECT_EQ(l.recv, buf(0));
  // Rank 1 copies in only its own rows (none of t0).
  EXPECT_EQ(l.copy_in,
            (std::vector<Copy>{{buf(16), in(0), 0}, {buf(16), in(1), 20}}));
  // Each output gathers its rows from every rank's block, in rank order.
  EXPECT_EQ(l.copy_out, (std::vector<Copy>{{out(0, 0, 0), buf(0), 8},
                                           {out(1, 0, 0), buf(8), 8},
                                           {out(0, 0, 8), buf(16), 0},
                                           {out(1, 0, 8), buf(16), 20},
                                           {out(0, 0, 8), buf(36), 24},
                                           {out(1, 0, 28), buf(60), 4}}));
  expect_aligned(l, 4);
  // A failed output allocation: the rank still sends, writes nothing.
  Layout failed = lay(r, 1, 3, {{true, false}, {true, true}}, false);
  EXPECT_EQ(failed.copy_in, l.copy_in);
  EXPECT_EQ(failed.copy_out.size(), 3u);
}

TEST(FusionLayout, AlltoallSendsThenReceives) {
  // Rows of 3 elements; [rank][peer] rows sent.
  Response r = response(HVD_COLL_ALLTOALL, HVD_FLOAT64, {{{0, 3}}});
  r.entries[0].per_rank = {{1, 2}, {4, 0}};
  Layout l = lay(r, 0, 2, all_held(1), false);
  EXPECT_EQ(l.send_counts, (std::vector<size_t>{3, 6}));
  EXPECT_EQ(l.send_displs, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(l.counts, (std::vector<size_t>{3, 12}));
  EXPECT_EQ(l.displs, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(l.received_splits, (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(l.buffer_bytes, (9 + 15) * 8u);
  EXPECT_EQ(l.send, buf(0));
  EXPECT_EQ(l.recv, buf(72));
  EXPECT_EQ(l.copy_in, (std::vector<Copy>{{buf(0), in(0), 72}}));
  EXPECT_EQ(l.copy_out, (std::vector<Copy>{{out(0), buf(72), 120}}));
  EXPECT_TRUE(l.moves_data);

  Layout peer = lay(r, 1, 2, all_held(1), false);
  EXPECT_EQ(peer.received_splits, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(peer.counts, (std::vector<size_t>{6, 0}));
}

TEST(FusionLayout, ReducescatterSplitsRowsUnevenly) {
  // 7 rows of 2 elements over 3 ranks: 3, 2, 2 rows; then one of 2 rows:
  // 1, 1, 0.
  Response r = response(HVD_COLL_REDUCESCATTER, HVD_INT32, {{{7, 2}}, {{2}}});
  Layout l = lay(r, 2, 3, all_held(2), false);
  EXPECT_EQ(l.counts, (std::vector<size_t>{6 + 1, 4 + 1, 4 + 0}));
  EXPECT_EQ(l.displs, (std::vector<size_t>{0, 7, 12}));
  EXPECT_EQ(l.count, 16u);
  // The input blocks, then this rank's result.
  EXPECT_EQ(l.buffer_bytes, (16 + 4) * 4u);
  EXPECT_EQ(l.send, buf(0));
  EXPECT_EQ(l.recv, buf(64));
  EXPECT_EQ(l.copy_in, (std::vector<Copy>{{buf(0), in(0, 0, 0), 24},
                                          {buf(24), in(1, 0, 0), 4},
                                          {buf(28), in(0, 0, 24), 16},
                                          {buf(44), in(1, 0, 4), 4},
                                          {buf(48), in(0, 0, 40), 16},
                                          {buf(64), in(1, 0, 8), 0}}));
  EXPECT_EQ(l.copy_out,
            (std::vector<Copy>{{out(0), buf(64), 16}, {out(1), buf(80), 0}}));
  expect_aligned(l, 4);

  Layout joined = lay(r, 0, 3, {{true, true}, {false, false}}, false);
  EXPECT_EQ(joined.copy_in[1], (Copy{buf(24), kZeros, 4}));
  EXPECT_EQ(joined.copy_out, (std::vector<Copy>{{out(0), buf(64), 24}}));
}

TEST(FusionLayout, GatheredShapes) {
  Response gather = response(HVD_COLL_ALLGATHER, HVD_FLOAT32, {{{1, 4, 2}}});
  gather.entries[0].per_rank = {{1, 0, 6}};
  EXPECT_EQ(gathered_shape(gather, 0, 0, 1), (std::vector<int64_t>{7, 4, 2}));
  Response a2a = response(HVD_COLL_ALLTOALL, HVD_FLOAT32, {{{3, 5}}});
  a2a.entries[0].per_rank = {{1, 2}, {0, 3}};
  EXPECT_EQ(gathered_shape(a2a, 0, 0, 0), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(gathered_shape(a2a, 0, 0, 1), (std::vector<int64_t>{5, 5}));
  Response allreduce = response(HVD_COLL_ALLREDUCE, HVD_FLOAT32, {{{3}}});
  EXPECT_THROW(gathered_shape(allreduce, 0, 0, 0), Error);
}

TEST(FusionLayout, ALayoutReusedHoldsNothingOfTheLastOne) {
  Response gather = response(HVD_COLL_ALLGATHER, HVD_FLOAT32, {{{2}}});
  gather.entries[0].per_rank = {{2, 2}};
  Layout l;
  lay_out(gather, 0, 2, all_held(1), false, l);
  ASSERT_FALSE(l.counts.empty());
  Response allreduce = response(HVD_COLL_ALLREDUCE, HVD_FLOAT32, {{{3}}});
  lay_out(allreduce, 0, 2, all_held(1), true, l);
  EXPECT_EQ(l.buffer_bytes, 0u);
  EXPECT_TRUE(l.counts.empty());
  EXPECT_TRUE(l.displs.empty());
  EXPECT_TRUE(l.copy_out.empty());
  EXPECT_EQ(l.send, in(0));
  EXPECT_EQ(l.count, 3u);
}

TEST(FusionLayout, MalformedResponsesAreRefused) {
  Response gather = response(HVD_COLL_ALLGATHER, HVD_FLOAT32, {{{2}}});
  EXPECT_THROW(lay(gather, 0, 2, all_held(1), false), Error);  // no rows
  gather.entries[0].per_rank = {{2}};
  EXPECT_THROW(lay(gather, 0, 2, all_held(1), false), Error);  // 1 rank
  Response barrier = response(HVD_COLL_BARRIER, HVD_FLOAT32, {{{1}}});
  EXPECT_THROW(lay(barrier, 0, 2, all_held(1), false), Error);
  Response allreduce = response(HVD_COLL_ALLREDUCE, HVD_FLOAT32, {{{1}}});
  EXPECT_THROW(lay(allreduce, 0, 2, all_held(2), false), Error);
  EXPECT_THROW(lay(allreduce, 2, 2, all_held(1), false), Error);
}

}  // namespace
}  // namespace hvd::runtime
