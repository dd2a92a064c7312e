// The adasum reducer: Horovod's Adasum on 1, 2, 4 and 8 ranks for float16,
// float32 and float64, against a reference computed here the way Adasum is
// defined (the pairwise combination applied up a binary tree over the
// ranks, rounded to the dtype at each level); the same bits on every rank;
// a clear refusal of other rank counts, dtypes and ops.
#include <cmath>
#include <sstream>

#include "adasum_pair.h"
#include "device/device.h"
#include "support.h"

namespace hvd::test {
namespace {

std::vector<double> round_to(hvd_dtype dtype, const std::vector<double>& v) {
  return as_doubles(dtype, from_doubles(dtype, v));
}

// Ranks [first, first + count) combined: left half with right half.
std::vector<double> adasum_reference(hvd_dtype dtype,
                                     const std::vector<std::vector<double>>& in,
                                     size_t first, size_t count) {
  if (count == 1) return in[first];
  const auto left = adasum_reference(dtype, in, first, count / 2);
  const auto right = adasum_reference(dtype, in, first + count / 2, count / 2);
  return round_to(dtype, adasum_pair(left, right));
}

struct AdasumCase {
  hvd_dtype dtype = HVD_FLOAT32;
  size_t count = 0;
  bool in_place = false;
  double prescale = 1.0, postscale = 1.0;
  bool chaos = false;
};

std::vector<RankOutcome> run_adasum(int32_t n, const AdasumCase& c,
                                    std::vector<Bytes>& inputs,
                                    std::vector<Bytes>& recv) {
  const size_t esize = dtype_size(c.dtype);
  inputs.assign(n, Bytes());
  recv.assign(n, Bytes());
  for (int32_t r = 0; r < n; ++r) {
    inputs[r] = random_input(c.dtype, r, c.count, c.count * 31 + n);
    recv[r] = c.in_place ? inputs[r] : Bytes(c.count * esize, 0xCD);
  }
  RunOptions options;
  options.chaos = Chaos{c.chaos, c.count + 7};
  return run_collective(
      reducers("adasum", n), all_ranks(n), n,
      [&](int32_t r) {
        hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, c.dtype);
        a.op = HVD_OP_ADASUM;
        a.send = c.in_place ? recv[r].data() : inputs[r].data();
        a.recv = recv[r].data();
        a.count = c.count;
        a.prescale = c.prescale;
        a.postscale = c.postscale;
        return a;
      },
      options);
}

void check_adasum(int32_t n, const AdasumCase& c) {
  std::ostringstream what;
  what << "adasum " << dtype_name(c.dtype) << " count " << c.count << " on "
       << n << " ranks" << (c.in_place ? " in place" : "")
       << (c.chaos ? " with chaos" : "");
  if (c.prescale != 1.0 || c.postscale != 1.0) {
    what << " scaled " << c.prescale << "/" << c.postscale;
  }
  std::vector<Bytes> inputs, recv;
  const auto outcomes = run_adasum(n, c, inputs, recv);
  std::vector<std::vector<double>> in(n);
  for (int32_t r = 0; r < n; ++r) {
    in[r] = as_doubles(c.dtype, inputs[r]);
    for (double& x : in[r]) x *= c.prescale;
    in[r] = round_to(c.dtype, in[r]);
  }
  std::vector<double> expected = adasum_reference(c.dtype, in, 0, n);
  for (double& x : expected) x *= c.postscale;
  const double tolerance = c.dtype == HVD_FLOAT16   ? 4e-3
                           : c.dtype == HVD_FLOAT32 ? 1e-5
                                                    : 1e-12;
  const size_t esize = dtype_size(c.dtype);
  for (int32_t r = 0; r < n; ++r) {
    ASSERT_EQ(outcomes[r].status, HVD_OK)
        << what.str() << ", rank " << r << ": " << outcomes[r].message;
    ASSERT_EQ(compare(recv[0], recv[r], esize), "")
        << what.str() << ": rank " << r << " differs from rank 0";
  }
  const std::vector<double> got = as_doubles(c.dtype, recv[0]);
  for (size_t i = 0; i < c.count; ++i) {
    ASSERT_NEAR(got[i], expected[i],
                tolerance * std::max(1.0, std::fabs(expected[i])))
        << what.str() << ", element " << i;
  }
}

TEST(Adasum, MatchesTheReferenceOnPowerOfTwoTeams) {
  for (int32_t n : {1, 2, 4, 8}) {
    for (hvd_dtype dtype : {HVD_FLOAT16, HVD_FLOAT32, HVD_FLOAT64}) {
      for (size_t count : {size_t(0), size_t(1), size_t(2), size_t(7),
                           size_t(1023), size_t(4099)}) {
        for (bool in_place : {false, true}) {
          AdasumCase c;
          c.dtype = dtype;
          c.count = count;
          c.in_place = in_place;
          c.chaos = count == 1023;
          check_adasum(n, c);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(Adasum, AppliesPrescaleAndPostscale) {
  for (int32_t n : {2, 4}) {
    for (hvd_dtype dtype : {HVD_FLOAT32, HVD_FLOAT64}) {
      AdasumCase c;
      c.dtype = dtype;
      c.count = 257;
      c.prescale = 0.5;
      c.postscale = 0.25;
      check_adasum(n, c);
      if (HasFatalFailure()) return;
    }
  }
}

// Two equal gradients: Adasum gives the gradient itself (not twice it);
// orthogonal ones: their sum.
TEST(Adasum, KeepsEqualVectorsAndAddsOrthogonalOnes) {
  const int32_t n = 2;
  for (bool orthogonal : {false, true}) {
    std::vector<std::vector<float>> data(n);
    data[0] = {1, 2, 0, 0};
    data[1] = orthogonal ? std::vector<float>{0, 0, 3, 4}
                         : std::vector<float>{1, 2, 0, 0};
    const auto outcomes =
        run_collective(reducers("adasum", n), all_ranks(n), n, [&](int32_t r) {
          hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, HVD_FLOAT32);
          a.op = HVD_OP_ADASUM;
          a.send = a.recv = data[r].data();
          a.count = 4;
          return a;
        });
    const std::vector<float> expected = orthogonal
                                            ? std::vector<float>{1, 2, 3, 4}
                                            : std::vector<float>{1, 2, 0, 0};
    for (int32_t r = 0; r < n; ++r) {
      ASSERT_EQ(outcomes[r].status, HVD_OK) << outcomes[r].message;
      EXPECT_EQ(data[r], expected) << "rank " << r;
    }
  }
}

TEST(Adasum, RefusesOtherTeamsDtypesAndOpsClearly) {
  for (int32_t n : {3, 5, 6, 7}) {
    std::vector<Bytes> inputs, recv;
    AdasumCase c;
    c.count = 16;
    const auto outcomes = run_adasum(n, c, inputs, recv);
    for (int32_t r = 0; r < n; ++r) {
      EXPECT_EQ(outcomes[r].posted, HVD_ERR_UNSUPPORTED) << n << " ranks";
      EXPECT_NE(outcomes[r].message.find("power-of-two"), std::string::npos)
          << outcomes[r].message;
      EXPECT_NE(outcomes[r].message.find(std::to_string(n)), std::string::npos)
          << outcomes[r].message;
    }
  }
  const RankReducers& red = reducers("adasum", 1);
  Fabric fabric(1);
  hvd_p2p_s p2p(&fabric, 1, {0}, 0, Chaos{});
  int32_t x[4] = {1, 2, 3, 4};
  hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, HVD_INT32);
  a.op = HVD_OP_ADASUM;
  a.send = a.recv = x;
  a.count = 4;
  hvd_task* task = nullptr;
  EXPECT_EQ(red.api().post(red[0], &a, p2p_api(), &p2p, &task),
            HVD_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(red.api().last_error(red[0])).find("int32"),
            std::string::npos)
      << red.api().last_error(red[0]);
  a.dtype = HVD_FLOAT32;
  a.op = HVD_OP_SUM;
  EXPECT_EQ(red.api().post(red[0], &a, p2p_api(), &p2p, &task),
            HVD_ERR_UNSUPPORTED);
  a.op = HVD_OP_ADASUM;
  a.collective = HVD_COLL_BROADCAST;
  EXPECT_EQ(red.api().post(red[0], &a, p2p_api(), &p2p, &task),
            HVD_ERR_UNSUPPORTED);
}

TEST(Adasum, TableScoresAndOptions) {
  const hvd_reducer_api& api = plugin("adasum").api();
  EXPECT_EQ(api.kind, HVD_PLUGIN_REDUCER);
  EXPECT_STREQ(api.name, "adasum");
  EXPECT_EQ(api.struct_size, sizeof(hvd_reducer_api));
  EXPECT_TRUE(offered(plugin("adasum"), HVD_COLL_ALLREDUCE));
  for (hvd_collective coll :
       {HVD_COLL_ALLGATHER, HVD_COLL_BROADCAST, HVD_COLL_ALLTOALL,
        HVD_COLL_REDUCESCATTER, HVD_COLL_BARRIER}) {
    EXPECT_FALSE(offered(plugin("adasum"), coll)) << coll;
  }
  TestHost host("reducer.adasum", {{"chunk_bytes", "1MiB"}});
  hvd_reducer* r = nullptr;
  EXPECT_EQ(api.init(host.table(), &r), HVD_ERR_CONFIG);
  ASSERT_EQ(host.config_errors().size(), 1u);
  EXPECT_NE(host.config_errors()[0].find("unknown key"), std::string::npos);
}

TEST(Adasum, WarmReducerAllocatesNothing) {
  const int32_t n = 4;
  const RankReducers& red = reducers("adasum", n);
  std::vector<std::vector<float>> data(n, std::vector<float>(4096, 1.0f));
  auto args = [&](int32_t r) {
    hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, HVD_FLOAT32);
    a.op = HVD_OP_ADASUM;
    a.send = a.recv = data[r].data();
    a.count = 4096;
    return a;
  };
  run_collective(red, all_ranks(n), n, args);
  std::vector<int64_t> before(n);
  for (int32_t r = 0; r < n; ++r) before[r] = red.host(r).allocations();
  for (int i = 0; i < 3; ++i) run_collective(red, all_ranks(n), n, args);
  for (int32_t r = 0; r < n; ++r) {
    EXPECT_EQ(red.host(r).allocations(), before[r]) << "rank " << r;
  }
}

}  // namespace
}  // namespace hvd::test
