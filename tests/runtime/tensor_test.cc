#include <gtest/gtest.h>

#include "common/error.h"
#include "runtime/pending_op.h"
#include "runtime/tensor_view.h"

namespace hvd::runtime {
namespace {

hvd_tensor tensor(void* data, hvd_dl_dtype dtype,
                  const std::vector<int64_t>& shape,
                  const int64_t* strides = nullptr) {
  hvd_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  t.shape = shape.data();
  t.strides = strides;
  return t;
}

const hvd_dl_dtype kF32 = {HVD_DL_FLOAT, 32, 1};

TEST(TensorView, EveryDtypeMapsBothWays) {
  for (hvd_dtype d = 0; d < HVD_DTYPE_COUNT; ++d) {
    EXPECT_EQ(dtype_from_dl(dl_dtype(d)), d);
  }
  EXPECT_EQ(dtype_from_dl({HVD_DL_UINT, 32, 1}), -1);
  EXPECT_EQ(dtype_from_dl({HVD_DL_FLOAT, 32, 4}), -1);
}

TEST(TensorView, CountsBeyondTwoToTheThirtyOne) {
  std::vector<int64_t> shape = {3, int64_t{1} << 30};
  char byte;
  TensorView v = view_tensor(tensor(&byte, kF32, shape), "t");
  EXPECT_EQ(v.elements, uint64_t{3} << 30);
  EXPECT_EQ(v.bytes, uint64_t{12} << 30);
}

TEST(TensorView, RejectsNonContiguousWithAClearMessage) {
  std::vector<int64_t> shape = {4, 3};
  int64_t transposed[] = {1, 4};
  float data[12];
  try {
    view_tensor(tensor(data, kF32, shape, transposed), "allreduce 'x' input 0");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_INVALID_ARGUMENT);
    std::string m = e.what();
    EXPECT_NE(m.find("allreduce 'x' input 0"), std::string::npos) << m;
    EXPECT_NE(m.find("non-contiguous"), std::string::npos) << m;
  }
  int64_t compact[] = {3, 1};
  EXPECT_NO_THROW(view_tensor(tensor(data, kF32, shape, compact), "t"));
  // A dimension of extent 1 may carry any stride.
  std::vector<int64_t> column = {12, 1};
  int64_t odd[] = {1, 99};
  EXPECT_NO_THROW(view_tensor(tensor(data, kF32, column, odd), "t"));
}

TEST(TensorView, RejectsBadDescriptors) {
  float data[4];
  std::vector<int64_t> negative = {-1};
  EXPECT_THROW(view_tensor(tensor(data, kF32, negative), "t"), Error);
  std::vector<int64_t> huge = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_THROW(view_tensor(tensor(data, kF32, huge), "t"), Error);
  std::vector<int64_t> four = {4};
  EXPECT_THROW(view_tensor(tensor(nullptr, kF32, four), "t"), Error);
  hvd_tensor old = tensor(data, kF32, four);
  old.struct_size = 8;
  EXPECT_THROW(view_tensor(old, "t"), Error);
  std::vector<int64_t> empty = {0};
  EXPECT_NO_THROW(view_tensor(tensor(nullptr, kF32, empty), "t"));
}

hvd_op op_of(hvd_collective c, const hvd_tensor* in, int32_t n = 1) {
  hvd_op op{};
  op.struct_size = sizeof op;
  op.collective = c;
  op.name = "t";
  op.tensor_count = n;
  op.inputs = in;
  return op;
}

std::string failure(const hvd_op& op, int32_t size = 2, int32_t rank = 0) {
  try {
    make_pending_op(op, size, rank, "barrier.0");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PendingOp, ChecksTheOp) {
  float data[6];
  std::vector<int64_t> shape = {6};
  hvd_tensor in = tensor(data, kF32, shape);

  hvd_op ag = op_of(HVD_COLL_ALLGATHER, &in);
  ag.outputs = &in;
  EXPECT_NE(failure(ag).find("outputs must be null"), std::string::npos);

  hvd_tensor two[] = {in, in};
  EXPECT_NE(failure(op_of(HVD_COLL_BROADCAST, two, 2)).find("grouped"),
            std::string::npos);

  hvd_op bc = op_of(HVD_COLL_BROADCAST, &in);
  bc.root = 2;
  EXPECT_NE(failure(bc).find("root 2"), std::string::npos);

  hvd_op a2a = op_of(HVD_COLL_ALLTOALL, &in);
  int32_t splits[] = {1, 2};
  a2a.splits = splits;
  a2a.split_count = 2;
  EXPECT_NE(failure(a2a).find("add up to 3"), std::string::npos);
  a2a.splits = nullptr;
  EXPECT_EQ(failure(a2a, 3), "");
  EXPECT_NE(failure(a2a, 4).find("divide"), std::string::npos);

  // Reducescatter of 6 rows over 4 ranks: ranks 0 and 1 get 2 rows.
  hvd_op rs = op_of(HVD_COLL_REDUCESCATTER, &in);
  float out_data[2];
  std::vector<int64_t> out_shape = {2};
  hvd_tensor out = tensor(out_data, kF32, out_shape);
  rs.outputs = &out;
  EXPECT_EQ(failure(rs, 4, 1), "");
  EXPECT_NE(failure(rs, 4, 2).find("expected [1]"), std::string::npos);

  hvd_op unnamed = op_of(HVD_COLL_ALLREDUCE, &in);
  unnamed.name = nullptr;
  EXPECT_NE(failure(unnamed).find("without a name"), std::string::npos);
  hvd_op barrier = op_of(HVD_COLL_BARRIER, nullptr, 0);
  barrier.name = nullptr;
  EXPECT_EQ(make_pending_op(barrier, 2, 0, "barrier.7").name(), "barrier.7");

  // Adasum: allreduce of one tensor at a time (its coefficients are per
  // tensor); the adasum reducer runs it.
  hvd_op adasum = op_of(HVD_COLL_ALLREDUCE, &in);
  adasum.op = HVD_OP_ADASUM;
  EXPECT_EQ(failure(adasum), "");
  hvd_tensor pair[2] = {in, in};
  hvd_op grouped_adasum = op_of(HVD_COLL_ALLREDUCE, pair, 2);
  grouped_adasum.op = HVD_OP_ADASUM;
  EXPECT_NE(failure(grouped_adasum).find("adasum"), std::string::npos);
  hvd_op adasum_rs = op_of(HVD_COLL_REDUCESCATTER, &in);
  adasum_rs.op = HVD_OP_ADASUM;
  adasum_rs.outputs = &out;
  EXPECT_NE(failure(adasum_rs, 4, 1).find("adasum"), std::string::npos);

  hvd_op scaled = op_of(HVD_COLL_ALLREDUCE, &in);
  PendingOp p = make_pending_op(scaled, 2, 0, "");
  EXPECT_EQ(p.request.prescale, 1.0);              // 0 reads as 1
  EXPECT_EQ(p.outputs[0].data, p.inputs[0].data);  // in place
}

TEST(PendingOp, ReducescatterRows) {
  EXPECT_EQ(reducescatter_rows(7, 3), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(reducescatter_rows(1, 3), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(reducescatter_rows(0, 2), (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace hvd::runtime
