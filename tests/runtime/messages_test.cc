#include "runtime/messages.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace hvd::runtime {
namespace {

TEST(Messages, RequestsRoundTrip) {
  RequestList list;
  list.shutdown = true;
  list.busy = true;
  Request q;
  q.process_set = 2;
  q.name = "layer/1/weight";
  q.collective = HVD_COLL_ALLTOALL;
  q.dtype = HVD_BFLOAT16;
  q.op = HVD_OP_MAX;
  q.prescale = 0.25;
  q.postscale = 3;
  q.root = 1;
  q.shapes = {{3, 4}, {}, {0}};
  q.splits = {1, 2};
  list.requests.push_back(q);
  list.requests.push_back(Request{});
  std::vector<uint8_t> bytes;
  encode(list, bytes);
  RequestList back = decode_requests(bytes);
  EXPECT_TRUE(back.shutdown);
  EXPECT_TRUE(back.busy);
  ASSERT_EQ(back.requests.size(), 2u);
  const Request& b = back.requests[0];
  EXPECT_EQ(b.process_set, 2);
  EXPECT_EQ(b.name, q.name);
  EXPECT_EQ(b.collective, q.collective);
  EXPECT_EQ(b.dtype, q.dtype);
  EXPECT_EQ(b.op, q.op);
  EXPECT_EQ(b.prescale, q.prescale);
  EXPECT_EQ(b.postscale, q.postscale);
  EXPECT_EQ(b.root, q.root);
  EXPECT_EQ(b.shapes, q.shapes);
  EXPECT_EQ(b.splits, q.splits);
}

TEST(Messages, ResponsesRoundTrip) {
  ResponseList list;
  list.shutdown_rank = 3;
  list.busy = true;
  Response r;
  r.kind = ResponseKind::kError;
  r.collective = HVD_COLL_ALLGATHER;
  r.reducer = "ring";
  r.error_status = HVD_ERR_MISMATCH;
  r.error = "allgather 'x': ranks disagree";
  r.last_joined = 1;
  r.entries.push_back(Entry{"x", {{2, 3}}, {{1, 2, 3}}});
  list.responses.push_back(r);
  std::vector<uint8_t> bytes;
  encode(list, bytes);
  ResponseList back = decode_responses(bytes);
  EXPECT_FALSE(back.shutdown);
  EXPECT_EQ(back.shutdown_rank, 3);
  EXPECT_TRUE(back.busy);
  ASSERT_EQ(back.responses.size(), 1u);
  const Response& b = back.responses[0];
  EXPECT_EQ(b.kind, ResponseKind::kError);
  EXPECT_EQ(b.reducer, "ring");
  EXPECT_EQ(b.error, r.error);
  EXPECT_EQ(b.error_status, HVD_ERR_MISMATCH);
  EXPECT_EQ(b.last_joined, 1);
  EXPECT_EQ(b.entries[0].name, "x");
  EXPECT_EQ(b.entries[0].shapes, r.entries[0].shapes);
  EXPECT_EQ(b.entries[0].per_rank, r.entries[0].per_rank);
}

TEST(Messages, TruncatedInputIsAnError) {
  RequestList list;
  list.requests.push_back(Request{});
  std::vector<uint8_t> bytes;
  encode(list, bytes);
  bytes.resize(bytes.size() - 3);
  EXPECT_THROW(decode_requests(bytes), Error);
}

}  // namespace
}  // namespace hvd::runtime
