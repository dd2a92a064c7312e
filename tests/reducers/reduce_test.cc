// Allreduce and reducescatter through each reducer plugin: every dtype and
// op, counts 0, 1, 7, 1023 (and 2^20+3 for a few), 1 to 8 ranks, in place
// and out of place, prescale/postscale, against an exact reference; and
// bit-identical results on every rank for values that round.
#include <cmath>
#include <cstring>
#include <sstream>

#include "device/device.h"
#include "support.h"

namespace hvd::test {
namespace {

const size_t kCounts[] = {0, 1, 7, 1023};
const size_t kLarge = (size_t(1) << 20) + 3;

struct ReduceCase {
  hvd_dtype dtype = HVD_FLOAT32;
  hvd_reduce_op op = HVD_OP_SUM;
  hvd_reduce_op arg_op = -1;  // what post() is told; -1: op
  size_t count = 0;
  bool in_place = false;
  double prescale = 1.0, postscale = 1.0;
  bool chaos = false;
  uint64_t seed = 1;
};

std::string describe(const std::string& plugin, const char* coll, int32_t n,
                     const ReduceCase& c) {
  std::ostringstream out;
  out << plugin << " " << coll << " " << dtype_name(c.dtype) << " "
      << op_name(c.op) << " count " << c.count << " on " << n << " ranks"
      << (c.in_place ? " in place" : "") << (c.chaos ? " with chaos" : "");
  if (c.prescale != 1.0 || c.postscale != 1.0) {
    out << " scaled " << c.prescale << "/" << c.postscale;
  }
  return out.str();
}

// Each rank's contribution as the reducer must combine it (prescaled).
std::vector<Bytes> contributions(const std::vector<Bytes>& inputs,
                                 const ReduceCase& c) {
  std::vector<Bytes> v = inputs;
  if (c.prescale != 1.0) {
    for (Bytes& b : v) scale(c.dtype, b, c.prescale);
  }
  return v;
}

void check_allreduce(const RankReducers& red, int32_t n, const ReduceCase& c,
                     const std::string& what) {
  const size_t esize = dtype_size(c.dtype);
  std::vector<Bytes> inputs(n), recv(n);
  for (int32_t r = 0; r < n; ++r) {
    inputs[r] = reduction_input(c.dtype, c.op, r, c.count, c.seed);
    recv[r] = c.in_place ? inputs[r] : Bytes(c.count * esize, 0xCD);
  }
  Bytes expected = reduce_reference(c.dtype, c.op, contributions(inputs, c));
  const double post =
      c.arg_op == HVD_OP_AVERAGE ? c.postscale / n : c.postscale;
  if (post != 1.0) scale(c.dtype, expected, post);
  RunOptions options;
  options.chaos = Chaos{c.chaos, c.seed};
  const auto outcomes = run_collective(
      red, all_ranks(n), n,
      [&](int32_t r) {
        hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, c.dtype);
        a.op = c.arg_op >= 0 ? c.arg_op : c.op;
        a.send = c.in_place ? recv[r].data() : inputs[r].data();
        a.recv = recv[r].data();
        a.count = c.count;
        a.prescale = c.prescale;
        a.postscale = c.postscale;
        return a;
      },
      options);
  for (int32_t r = 0; r < n; ++r) {
    ASSERT_EQ(outcomes[r].status, HVD_OK)
        << what << ", rank " << r << ": " << outcomes[r].message;
    ASSERT_EQ(compare(expected, recv[r], esize), "") << what << ", rank " << r;
  }
}

// counts[k] of `total`: balanced, or uneven with some ranks getting none.
std::vector<size_t> split(size_t total, int32_t n, bool uneven) {
  std::vector<size_t> counts(n, 0);
  if (!uneven) {
    for (int32_t k = 0; k < n; ++k)
      counts[k] = total / n + ((size_t)k < total % n);
    return counts;
  }
  size_t left = total;
  for (int32_t k = 0; k < n && left > 0; ++k) {
    const size_t take = k % 3 == 1 ? 0 : std::min(left, left / 2 + 1);
    counts[k] = k == n - 1 ? left : take;
    left -= counts[k];
  }
  counts[n - 1] += left;
  return counts;
}

void check_reducescatter(const RankReducers& red, int32_t n,
                         const ReduceCase& c, bool uneven,
                         const std::string& what) {
  const size_t esize = dtype_size(c.dtype);
  const std::vector<size_t> counts = split(c.count, n, uneven);
  std::vector<size_t> displs(n, 0);
  for (int32_t k = 1; k < n; ++k) displs[k] = displs[k - 1] + counts[k - 1];
  std::vector<Bytes> inputs(n), work(n), recv(n);
  for (int32_t r = 0; r < n; ++r) {
    inputs[r] = reduction_input(c.dtype, c.op, r, c.count, c.seed);
    work[r] = inputs[r];  // in place: the result lands at its start
    recv[r] = Bytes(counts[r] * esize, 0xCD);
  }
  Bytes all = reduce_reference(c.dtype, c.op, contributions(inputs, c));
  const double post =
      c.arg_op == HVD_OP_AVERAGE ? c.postscale / n : c.postscale;
  if (post != 1.0) scale(c.dtype, all, post);
  RunOptions options;
  options.chaos = Chaos{c.chaos, c.seed};
  const auto outcomes = run_collective(
      red, all_ranks(n), n,
      [&](int32_t r) {
        hvd_coll_args a = base_args(HVD_COLL_REDUCESCATTER, c.dtype);
        a.op = c.arg_op >= 0 ? c.arg_op : c.op;
        a.send = c.in_place ? work[r].data() : inputs[r].data();
        a.recv = c.in_place ? work[r].data() : recv[r].data();
        a.count = c.count;
        a.counts = counts.data();
        a.displs = displs.data();
        a.prescale = c.prescale;
        a.postscale = c.postscale;
        return a;
      },
      options);
  for (int32_t r = 0; r < n; ++r) {
    ASSERT_EQ(outcomes[r].status, HVD_OK)
        << what << ", rank " << r << ": " << outcomes[r].message;
    const Bytes expected(all.begin() + displs[r] * esize,
                         all.begin() + (displs[r] + counts[r]) * esize);
    const Bytes got =
        c.in_place ? Bytes(work[r].begin(), work[r].begin() + counts[r] * esize)
                   : recv[r];
    ASSERT_EQ(compare(expected, got, esize), "")
        << what << (uneven ? " uneven" : "") << ", rank " << r;
  }
}

using ReduceTest = PluginTest;

TEST_P(ReduceTest, AllreduceEveryDtypeOpCountAndRankCount) {
  REQUIRE_OFFERED(HVD_COLL_ALLREDUCE);
  for (int32_t n = 1; n <= 8; ++n) {
    const RankReducers& red = reducers(GetParam(), n);
    for (hvd_dtype dtype : all_dtypes()) {
      for (hvd_reduce_op op : kernel_ops()) {
        for (size_t count : kCounts) {
          for (bool in_place : {false, true}) {
            ReduceCase c;
            c.dtype = dtype;
            c.op = op;
            c.count = count;
            c.in_place = in_place;
            c.chaos = count == 1023;
            c.seed = n * 1000 + dtype * 10 + op;
            check_allreduce(red, n, c, describe(GetParam(), "allreduce", n, c));
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST_P(ReduceTest, AllreduceLargeCounts) {
  REQUIRE_OFFERED(HVD_COLL_ALLREDUCE);
  const std::pair<hvd_dtype, hvd_reduce_op> kinds[] = {
      {HVD_FLOAT32, HVD_OP_SUM},
      {HVD_FLOAT16, HVD_OP_SUM},
      {HVD_INT64, HVD_OP_MAX},
      {HVD_BFLOAT16, HVD_OP_PRODUCT}};
  int i = 0;
  for (int32_t n : {1, 2, 3, 5, 8}) {
    for (const auto& [dtype, op] : kinds) {
      ReduceCase c;
      c.dtype = dtype;
      c.op = op;
      c.count = kLarge;
      c.in_place = ++i % 2 == 0;
      check_allreduce(reducers(GetParam(), n), n, c,
                      describe(GetParam(), "allreduce", n, c));
      if (HasFatalFailure()) return;
    }
  }
}

// Many small chunks (segments) per step: the pipeline at its busiest.
TEST_P(ReduceTest, AllreduceInSmallPipelinedPieces) {
  REQUIRE_OFFERED(HVD_COLL_ALLREDUCE);
  const std::map<std::string, std::string> config =
      GetParam() != "tree"
          ? std::map<std::string, std::string>{{"chunk_bytes", "64"},
                                               {"pipeline_depth", "int:3"}}
          : std::map<std::string, std::string>{{"segment_bytes", "64"}};
  for (int32_t n = 1; n <= 8; ++n) {
    for (hvd_dtype dtype : {HVD_FLOAT32, HVD_INT8, HVD_FLOAT16, HVD_FLOAT64}) {
      for (size_t count : {size_t(7), size_t(1023), size_t(4099)}) {
        for (bool in_place : {false, true}) {
          ReduceCase c;
          c.dtype = dtype;
          c.op = dtype == HVD_INT8 ? HVD_OP_MAX : HVD_OP_SUM;
          c.count = count;
          c.in_place = in_place;
          c.chaos = true;
          c.seed = count + n;
          check_allreduce(
              reducers(GetParam(), n, config), n, c,
              describe(GetParam(), "allreduce", n, c) + " in small pieces");
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(ReduceTest, AllreducePrescalePostscaleAndAverage) {
  REQUIRE_OFFERED(HVD_COLL_ALLREDUCE);
  for (int32_t n : {1, 3, 4, 7}) {
    for (hvd_dtype dtype :
         {HVD_FLOAT32, HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16}) {
      for (bool in_place : {false, true}) {
        for (bool average : {false, true}) {
          ReduceCase c;
          c.dtype = dtype;
          c.op = HVD_OP_SUM;
          c.count = 1023;
          c.in_place = in_place;
          if (average) {
            c.arg_op = HVD_OP_AVERAGE;  // the reducer folds 1/n in itself
          } else {
            c.prescale = 0.5;
            c.postscale = 1.0 / n;
          }
          check_allreduce(reducers(GetParam(), n), n, c,
                          describe(GetParam(), "allreduce", n, c) +
                              (average ? " AVERAGE" : ""));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// Values whose sums round: the order of reduction shows in the low bits,
// and every rank must still hold the same bits.
TEST_P(ReduceTest, AllreduceResultsAreBitwiseIdenticalOnEveryRank) {
  REQUIRE_OFFERED(HVD_COLL_ALLREDUCE);
  for (int32_t n : {3, 5, 8}) {
    for (hvd_dtype dtype : {HVD_FLOAT32, HVD_FLOAT16, HVD_BFLOAT16}) {
      for (size_t count : {size_t(1023), (size_t(1) << 18) + 1}) {
        const size_t esize = dtype_size(dtype);
        std::vector<Bytes> inputs(n), recv(n);
        std::vector<double> exact(count, 0.0);
        for (int32_t r = 0; r < n; ++r) {
          inputs[r] = random_input(dtype, r, count, count + n);
          recv[r] = Bytes(count * esize, 0);
          const std::vector<double> v = as_doubles(dtype, inputs[r]);
          for (size_t i = 0; i < count; ++i) exact[i] += v[i];
        }
        const auto outcomes = run_collective(
            reducers(GetParam(), n), all_ranks(n), n, [&](int32_t r) {
              hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, dtype);
              a.send = inputs[r].data();
              a.recv = recv[r].data();
              a.count = count;
              return a;
            });
        const std::string what = GetParam() + " allreduce of random " +
                                 dtype_name(dtype) + " on " +
                                 std::to_string(n) + " ranks";
        for (int32_t r = 0; r < n; ++r) {
          ASSERT_EQ(outcomes[r].status, HVD_OK)
              << what << ": " << outcomes[r].message;
          ASSERT_EQ(compare(recv[0], recv[r], esize), "")
              << what << ": rank " << r << " differs from rank 0";
        }
        const std::vector<double> got = as_doubles(dtype, recv[0]);
        const double tolerance = dtype == HVD_FLOAT32 ? 1e-5 : 0.05;
        for (size_t i = 0; i < count; ++i) {
          ASSERT_NEAR(got[i], exact[i], tolerance * n)
              << what << ", element " << i;
        }
      }
    }
  }
}

// MIN and MAX of +0 and -0 (equal, yet different bits) keep whichever
// operand comes first: ranks agree only if they all combine operands in
// the same order.
TEST_P(ReduceTest, AllreduceCombinesOperandsInTheSameOrderEverywhere) {
  REQUIRE_OFFERED(HVD_COLL_ALLREDUCE);
  const size_t count = 4096;
  for (int32_t n = 2; n <= 8; ++n) {
    for (hvd_reduce_op op : {HVD_OP_MIN, HVD_OP_MAX}) {
      std::vector<std::vector<float>> inputs(n), recv(n);
      for (int32_t r = 0; r < n; ++r) {
        const Bytes bits = random_input(HVD_UINT8, r, count, 99);
        for (size_t i = 0; i < count; ++i) {
          inputs[r].push_back(bits[i] & 1 ? -0.0f : 0.0f);
        }
        recv[r].assign(count, 1.0f);
      }
      const auto outcomes = run_collective(
          reducers(GetParam(), n), all_ranks(n), n, [&](int32_t r) {
            hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, HVD_FLOAT32);
            a.op = op;
            a.send = inputs[r].data();
            a.recv = recv[r].data();
            a.count = count;
            return a;
          });
      for (int32_t r = 0; r < n; ++r) {
        ASSERT_EQ(outcomes[r].status, HVD_OK) << outcomes[r].message;
        ASSERT_EQ(std::memcmp(recv[r].data(), recv[0].data(), count * 4), 0)
            << GetParam() << " " << op_name(op) << " on " << n
            << " ranks: rank " << r << " differs from rank 0";
      }
    }
  }
}

TEST_P(ReduceTest, ReducescatterEveryDtypeOpCountAndRankCount) {
  REQUIRE_OFFERED(HVD_COLL_REDUCESCATTER);
  for (int32_t n = 1; n <= 8; ++n) {
    const RankReducers& red = reducers(GetParam(), n);
    for (hvd_dtype dtype : all_dtypes()) {
      for (hvd_reduce_op op : kernel_ops()) {
        for (size_t count : kCounts) {
          for (bool in_place : {false, true}) {
            ReduceCase c;
            c.dtype = dtype;
            c.op = op;
            c.count = count;
            c.in_place = in_place;
            c.chaos = count == 1023;
            c.seed = n * 1000 + dtype * 10 + op + 7;
            check_reducescatter(red, n, c, /*uneven=*/count % 2 == 1,
                                describe(GetParam(), "reducescatter", n, c));
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST_P(ReduceTest, ReducescatterLargeScaledAndInSmallPieces) {
  REQUIRE_OFFERED(HVD_COLL_REDUCESCATTER);
  const std::map<std::string, std::string> small_pieces = {
      {GetParam() == "tree" ? "segment_bytes" : "chunk_bytes", "64"}};
  for (int32_t n : {1, 3, 8}) {
    ReduceCase c;
    c.dtype = HVD_FLOAT32;
    c.count = kLarge;
    c.in_place = n == 3;
    check_reducescatter(reducers(GetParam(), n), n, c, false,
                        describe(GetParam(), "reducescatter", n, c));
    if (HasFatalFailure()) return;
  }
  for (int32_t n : {2, 5, 6}) {
    for (bool in_place : {false, true}) {
      for (bool average : {false, true}) {
        ReduceCase c;
        c.dtype = HVD_FLOAT16;
        c.count = 2001;
        c.in_place = in_place;
        c.chaos = true;
        if (average) {
          c.arg_op = HVD_OP_AVERAGE;
        } else {
          c.prescale = 2.0;
          c.postscale = 0.25;
        }
        check_reducescatter(
            reducers(GetParam(), n, small_pieces), n, c, in_place,
            describe(GetParam(), "reducescatter", n, c) + " in small chunks");
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reducers, ReduceTest,
                         ::testing::Values("ring", "tree", "halving-doubling"),
                         param_name);

}  // namespace
}  // namespace hvd::test
