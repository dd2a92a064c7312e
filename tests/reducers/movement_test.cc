// Allgather(v), broadcast, alltoall(v) and barrier through each reducer
// plugin, 1 to 8 ranks, counts 0, 1, 7, 1023 and 2^20+3, in place and out
// of place; and a team whose ranks are not the world's.
#include <atomic>
#include <sstream>

#include "device/device.h"
#include "support.h"

namespace hvd::test {
namespace {

const size_t kCounts[] = {0, 1, 7, 1023};
const size_t kLarge = (size_t(1) << 20) + 3;
const hvd_dtype kMovementDtypes[] = {HVD_UINT8, HVD_FLOAT16, HVD_FLOAT32,
                                     HVD_FLOAT64};

// Per-rank counts: all equal to `count`, or varied (zeros included).
std::vector<size_t> rank_counts(size_t count, int32_t n, bool varied) {
  std::vector<size_t> counts(n, count);
  if (varied) {
    for (int32_t k = 0; k < n; ++k)
      counts[k] = (count * (k + 1) + k) % (count + 2);
  }
  return counts;
}

// Prefix sums, with `gap` unused elements after every block.
std::vector<size_t> displacements(const std::vector<size_t>& counts,
                                  size_t gap) {
  std::vector<size_t> d(counts.size(), 0);
  for (size_t k = 1; k < counts.size(); ++k)
    d[k] = d[k - 1] + counts[k - 1] + gap;
  return d;
}

void check_allgather(const RankReducers& red, int32_t n, hvd_dtype dtype,
                     const std::vector<size_t>& counts, size_t gap,
                     bool in_place, const std::string& what) {
  const size_t esize = dtype_size(dtype);
  const std::vector<size_t> displs = displacements(counts, gap);
  const size_t total = displs.back() + counts.back() + gap;
  std::vector<Bytes> inputs(n), recv(n);
  Bytes expected(total * esize, 0xCD);
  for (int32_t r = 0; r < n; ++r) {
    inputs[r] = pattern(counts[r] * esize, 1000 + r);
    std::copy(inputs[r].begin(), inputs[r].end(),
              expected.begin() + displs[r] * esize);
  }
  for (int32_t r = 0; r < n; ++r) {
    recv[r] = Bytes(total * esize, 0xCD);
    if (in_place) {
      std::copy(inputs[r].begin(), inputs[r].end(),
                recv[r].begin() + displs[r] * esize);
    }
  }
  RunOptions options;
  options.chaos = Chaos{true, counts[0] + n};
  const auto outcomes = run_collective(
      red, all_ranks(n), n,
      [&](int32_t r) {
        hvd_coll_args a = base_args(HVD_COLL_ALLGATHER, dtype);
        a.send =
            in_place ? recv[r].data() + displs[r] * esize : inputs[r].data();
        a.recv = recv[r].data();
        a.count = counts[r];
        a.counts = counts.data();
        a.displs = displs.data();
        return a;
      },
      options);
  for (int32_t r = 0; r < n; ++r) {
    ASSERT_EQ(outcomes[r].status, HVD_OK)
        << what << ", rank " << r << ": " << outcomes[r].message;
    ASSERT_EQ(compare(expected, recv[r], esize), "") << what << ", rank " << r;
  }
}

using MovementTest = PluginTest;

TEST_P(MovementTest, Allgather) {
  REQUIRE_OFFERED(HVD_COLL_ALLGATHER);
  for (int32_t n = 1; n <= 8; ++n) {
    for (hvd_dtype dtype : kMovementDtypes) {
      for (size_t count : kCounts) {
        for (bool varied : {false, true}) {
          for (bool in_place : {false, true}) {
            std::ostringstream what;
            what << GetParam() << " allgather " << dtype_name(dtype)
                 << " count " << count << (varied ? " varied" : "")
                 << (in_place ? " in place" : "") << " on " << n << " ranks";
            check_allgather(reducers(GetParam(), n), n, dtype,
                            rank_counts(count, n, varied), varied ? 3 : 0,
                            in_place, what.str());
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST_P(MovementTest, AllgatherLargeAndInSmallChunks) {
  REQUIRE_OFFERED(HVD_COLL_ALLGATHER);
  for (int32_t n : {2, 5}) {
    check_allgather(reducers(GetParam(), n), n, HVD_FLOAT32,
                    rank_counts(kLarge / n, n, false), 0, n == 5,
                    GetParam() + " allgather of 2^20+3 float32");
    if (HasFatalFailure()) return;
  }
  if (GetParam() == "ring") {
    for (int32_t n : {3, 7}) {
      check_allgather(reducers("ring", n, {{"chunk_bytes", "64"}}), n,
                      HVD_FLOAT64, rank_counts(1023, n, true), 1, false,
                      "ring allgather in small chunks");
      if (HasFatalFailure()) return;
    }
  }
}

void check_broadcast(const RankReducers& red, int32_t n, hvd_dtype dtype,
                     size_t count, int32_t root, const std::string& what) {
  const size_t esize = dtype_size(dtype);
  const Bytes data = pattern(count * esize, count + root);
  std::vector<Bytes> recv(n);
  for (int32_t r = 0; r < n; ++r) {
    recv[r] = r == root ? data : Bytes(count * esize, 0xCD);
  }
  RunOptions options;
  options.chaos = Chaos{true, count * 3 + root};
  const auto outcomes = run_collective(
      red, all_ranks(n), n,
      [&](int32_t r) {
        hvd_coll_args a = base_args(HVD_COLL_BROADCAST, dtype);
        a.send = recv[r].data();
        a.recv = recv[r].data();
        a.count = count;
        a.root = root;
        return a;
      },
      options);
  for (int32_t r = 0; r < n; ++r) {
    ASSERT_EQ(outcomes[r].status, HVD_OK)
        << what << ", rank " << r << ": " << outcomes[r].message;
    ASSERT_EQ(compare(data, recv[r], esize), "") << what << ", rank " << r;
  }
}

TEST_P(MovementTest, BroadcastFromEveryKindOfRoot) {
  REQUIRE_OFFERED(HVD_COLL_BROADCAST);
  for (int32_t n = 1; n <= 8; ++n) {
    for (hvd_dtype dtype : {HVD_UINT8, HVD_FLOAT32, HVD_INT64}) {
      for (size_t count : kCounts) {
        for (int32_t root : {0, n / 2, n - 1}) {
          std::ostringstream what;
          what << GetParam() << " broadcast " << dtype_name(dtype) << " count "
               << count << " from " << root << " on " << n << " ranks";
          check_broadcast(reducers(GetParam(), n), n, dtype, count, root,
                          what.str());
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(MovementTest, BroadcastLargeAndInSmallPieces) {
  REQUIRE_OFFERED(HVD_COLL_BROADCAST);
  for (int32_t n : {2, 6}) {
    check_broadcast(reducers(GetParam(), n), n, HVD_FLOAT32, kLarge, n - 1,
                    GetParam() + " broadcast of 2^20+3 float32");
    if (HasFatalFailure()) return;
  }
  const std::map<std::string, std::string> small =
      GetParam() == "ring"
          ? std::map<std::string, std::string>{{"chunk_bytes", "64"}}
          : std::map<std::string, std::string>{{"segment_bytes", "64"}};
  for (int32_t n : {3, 8}) {
    check_broadcast(reducers(GetParam(), n, small), n, HVD_INT64, 1023, 1,
                    GetParam() + " broadcast in small pieces");
    if (HasFatalFailure()) return;
  }
}

void check_alltoall(const RankReducers& red, int32_t n, hvd_dtype dtype,
                    size_t base, bool in_place, const std::string& what) {
  const size_t esize = dtype_size(dtype);
  // sent[r][p]: elements rank r sends to rank p.
  std::vector<std::vector<size_t>> sent(n, std::vector<size_t>(n));
  for (int32_t r = 0; r < n; ++r) {
    for (int32_t p = 0; p < n; ++p)
      sent[r][p] = (base * (r + 2 * p + 1)) % (base + 3);
  }
  std::vector<std::vector<size_t>> send_counts(n), send_displs(n), counts(n),
      displs(n);
  std::vector<Bytes> send(n), recv(n), expected(n);
  for (int32_t r = 0; r < n; ++r) {
    send_counts[r] = sent[r];
    send_displs[r] = displacements(sent[r], 0);
    for (int32_t p = 0; p < n; ++p) counts[r].push_back(sent[p][r]);
    displs[r] = displacements(counts[r], 0);
  }
  for (int32_t r = 0; r < n; ++r) {
    const size_t send_total = send_displs[r].back() + send_counts[r].back();
    const size_t recv_total = displs[r].back() + counts[r].back();
    send[r] = pattern(send_total * esize, 77 + r);
    expected[r] = Bytes(recv_total * esize);
  }
  for (int32_t r = 0; r < n; ++r) {
    for (int32_t p = 0; p < n; ++p) {
      std::copy(send[p].begin() + send_displs[p][r] * esize,
                send[p].begin() + (send_displs[p][r] + sent[p][r]) * esize,
                expected[r].begin() + displs[r][p] * esize);
    }
    // In place: one buffer, large enough for both layouts.
    recv[r] = in_place ? send[r] : Bytes(expected[r].size(), 0xCD);
    if (recv[r].size() < expected[r].size()) recv[r].resize(expected[r].size());
  }
  RunOptions options;
  options.chaos = Chaos{true, base + n};
  const auto outcomes = run_collective(
      red, all_ranks(n), n,
      [&](int32_t r) {
        hvd_coll_args a = base_args(HVD_COLL_ALLTOALL, dtype);
        a.send = in_place ? recv[r].data() : send[r].data();
        a.recv = recv[r].data();
        a.counts = counts[r].data();
        a.displs = displs[r].data();
        a.send_counts = send_counts[r].data();
        a.send_displs = send_displs[r].data();
        return a;
      },
      options);
  for (int32_t r = 0; r < n; ++r) {
    ASSERT_EQ(outcomes[r].status, HVD_OK)
        << what << ", rank " << r << ": " << outcomes[r].message;
    const Bytes got(recv[r].begin(), recv[r].begin() + expected[r].size());
    ASSERT_EQ(compare(expected[r], got, esize), "") << what << ", rank " << r;
  }
}

TEST_P(MovementTest, Alltoall) {
  REQUIRE_OFFERED(HVD_COLL_ALLTOALL);
  for (int32_t n = 1; n <= 8; ++n) {
    for (hvd_dtype dtype : {HVD_UINT8, HVD_INT32, HVD_FLOAT64}) {
      for (size_t base : kCounts) {
        for (bool in_place : {false, true}) {
          std::ostringstream what;
          what << GetParam() << " alltoall " << dtype_name(dtype) << " base "
               << base << (in_place ? " in place" : "") << " on " << n
               << " ranks";
          check_alltoall(reducers(GetParam(), n), n, dtype, base, in_place,
                         what.str());
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  check_alltoall(reducers(GetParam(), 3), 3, HVD_FLOAT32, kLarge / 3, false,
                 GetParam() + " alltoall of about 2^20 float32");
}

TEST_P(MovementTest, BarrierWaitsForEveryRank) {
  REQUIRE_OFFERED(HVD_COLL_BARRIER);
  for (int32_t n = 1; n <= 8; ++n) {
    for (int round = 0; round < 3; ++round) {
      std::atomic<int32_t> arrived{0};
      std::atomic<int32_t> early{0};
      RunOptions options;
      options.chaos = Chaos{round > 0, (uint64_t)(n * 10 + round)};
      options.before_post = [&](int32_t) {
        ++arrived;
        return true;
      };
      options.after_done = [&](int32_t) {
        if (arrived.load() != n) ++early;
      };
      const auto outcomes = run_collective(
          reducers(GetParam(), n), all_ranks(n), n,
          [&](int32_t) { return base_args(HVD_COLL_BARRIER, HVD_UINT8); },
          options);
      for (int32_t r = 0; r < n; ++r) {
        ASSERT_EQ(outcomes[r].status, HVD_OK) << outcomes[r].message;
      }
      ASSERT_EQ(early.load(), 0) << GetParam() << " barrier on " << n
                                 << " ranks let a rank through early";
    }
  }
}

// A process set: team rank i is world rank {5, 1, 3}[i] of a world of 6.
TEST_P(MovementTest, TeamRanksAreNotWorldRanks) {
  REQUIRE_OFFERED(HVD_COLL_ALLREDUCE);
  const std::vector<int32_t> members = {5, 1, 3};
  const int32_t n = 3;
  const size_t count = 1023;
  std::vector<Bytes> inputs(n), recv(n);
  for (int32_t r = 0; r < n; ++r) {
    inputs[r] = reduction_input(HVD_INT32, HVD_OP_SUM, r, count, 5);
    recv[r] = Bytes(count * 4, 0);
  }
  const Bytes expected = reduce_reference(HVD_INT32, HVD_OP_SUM, inputs);
  const auto outcomes =
      run_collective(reducers(GetParam(), n), members, 6, [&](int32_t r) {
        hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, HVD_INT32);
        a.send = inputs[r].data();
        a.recv = recv[r].data();
        a.count = count;
        return a;
      });
  for (int32_t r = 0; r < n; ++r) {
    ASSERT_EQ(outcomes[r].status, HVD_OK) << outcomes[r].message;
    ASSERT_EQ(compare(expected, recv[r], 4), "") << "team rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Reducers, MovementTest,
                         ::testing::Values("ring", "tree"),
                         param_name);

}  // namespace
}  // namespace hvd::test
