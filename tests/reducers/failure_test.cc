// A rank that stops: its neighbours see the failure in their completions,
// the others through abort_task (as the control plane would call it), and
// every survivor fails naming the rank that stopped. Aborts come from
// another thread and are idempotent; a reducer is usable after a failure.
#include <sstream>

#include "support.h"

namespace hvd::test {
namespace {

// Arguments of a collective that needs every rank: allreduce, allgather or
// barrier, over `count` elements per rank.
struct Buffers {
  std::vector<Bytes> send, recv;
  std::vector<size_t> counts, displs;
};

std::function<hvd_coll_args(int32_t)> needs_everyone(hvd_collective coll,
                                                     int32_t n, size_t count,
                                                     Buffers& b) {
  b.send.assign(n, Bytes(count * 4, 1));
  b.recv.assign(n, Bytes(count * 4 * n, 0));
  b.counts.assign(n, count);
  b.displs.resize(n);
  for (int32_t k = 0; k < n; ++k) b.displs[k] = k * count;
  return [coll, count, &b](int32_t r) {
    hvd_coll_args a = base_args(coll, HVD_INT32);
    if (coll != HVD_COLL_BARRIER) {
      a.send = b.send[r].data();
      a.recv = b.recv[r].data();
      a.count = count;
      a.counts = b.counts.data();
      a.displs = b.displs.data();
    }
    return a;
  };
}

const hvd_collective kNeedEveryone[] = {HVD_COLL_ALLREDUCE, HVD_COLL_ALLGATHER,
                                        HVD_COLL_BARRIER};

using FailureTest = PluginTest;

TEST_P(FailureTest, NeighbourSeesThePeerFailureInItsCompletion) {
  for (hvd_collective coll : kNeedEveryone) {
    if (!offered(p(), coll)) continue;
    Buffers b;
    RunOptions options;
    options.before_post = [](int32_t r) { return r != 1; };  // rank 1 dies
    options.meanwhile = [](const std::vector<hvd_task*>&, Fabric& fabric) {
      fabric.fail_rank(1);
    };
    const auto outcomes =
        run_collective(reducers(GetParam(), 2), all_ranks(2), 2,
                       needs_everyone(coll, 2, 1000, b), options);
    EXPECT_EQ(outcomes[0].status, HVD_ERR_PEER_FAILED)
        << GetParam() << " " << coll << ": " << outcomes[0].message;
    EXPECT_EQ(outcomes[0].completion.peer, 1);
    EXPECT_NE(outcomes[0].message.find("rank 1"), std::string::npos)
        << outcomes[0].message;
  }
}

TEST_P(FailureTest, EverySurvivorFailsNamingTheRankThatStopped) {
  for (hvd_collective coll : kNeedEveryone) {
    if (!offered(p(), coll)) continue;
    for (int32_t n : {3, 5, 8}) {
      const int32_t dead = n / 2;
      Buffers b;
      RunOptions options;
      options.chaos = Chaos{true, (uint64_t)n};
      options.before_post = [dead](int32_t r) { return r != dead; };
      options.meanwhile = [dead](const std::vector<hvd_task*>& tasks,
                                 Fabric& fabric) {
        fabric.fail_rank(dead);
        const hvd_reducer_api& api = plugin(GetParam()).api();
        for (hvd_task* t : tasks) {
          if (t != nullptr) api.abort_task(t, HVD_ERR_PEER_FAILED, dead);
        }
      };
      const auto outcomes =
          run_collective(reducers(GetParam(), n), all_ranks(n), n,
                         needs_everyone(coll, n, 777, b), options);
      for (int32_t r = 0; r < n; ++r) {
        if (r == dead) continue;
        EXPECT_EQ(outcomes[r].status, HVD_ERR_PEER_FAILED)
            << GetParam() << " " << coll << " rank " << r << ": "
            << outcomes[r].message;
        EXPECT_EQ(outcomes[r].completion.peer, dead)
            << GetParam() << " " << coll << " rank " << r << ": "
            << outcomes[r].message;
      }
    }
  }
}

TEST_P(FailureTest, AbortFromAnotherThreadCarriesReasonAndPeer) {
  for (hvd_collective coll : kNeedEveryone) {
    if (!offered(p(), coll)) continue;
    const int32_t n = 4;
    Buffers b;
    RunOptions options;
    options.before_post = [](int32_t r) { return r != 3; };  // never arrives
    options.meanwhile = [](const std::vector<hvd_task*>& tasks, Fabric&) {
      const hvd_reducer_api& api = plugin(GetParam()).api();
      for (hvd_task* t : tasks) {
        if (t == nullptr) continue;
        api.abort_task(t, HVD_ERR_TIMEOUT, 3);
        api.abort_task(t, HVD_ERR_ABORTED, 0);  // idempotent: first one wins
      }
    };
    const auto outcomes =
        run_collective(reducers(GetParam(), n), all_ranks(n), n,
                       needs_everyone(coll, n, 64, b), options);
    for (int32_t r = 0; r < 3; ++r) {
      EXPECT_EQ(outcomes[r].status, HVD_ERR_TIMEOUT) << outcomes[r].message;
      EXPECT_EQ(outcomes[r].completion.peer, 3);
    }
  }
}

TEST_P(FailureTest, ReducerWorksAgainAfterAFailure) {
  const int32_t n = 3;
  {
    Buffers b;
    RunOptions options;
    options.before_post = [](int32_t r) { return r != 2; };
    options.meanwhile = [](const std::vector<hvd_task*>& tasks, Fabric& f) {
      f.fail_rank(2);
      for (hvd_task* t : tasks) {
        if (t) plugin(GetParam()).api().abort_task(t, HVD_ERR_PEER_FAILED, 2);
      }
    };
    run_collective(reducers(GetParam(), n), all_ranks(n), n,
                   needs_everyone(HVD_COLL_ALLREDUCE, n, 5000, b), options);
  }
  Buffers b;
  const auto outcomes =
      run_collective(reducers(GetParam(), n), all_ranks(n), n,
                     needs_everyone(HVD_COLL_ALLREDUCE, n, 5000, b));
  for (int32_t r = 0; r < n; ++r) {
    ASSERT_EQ(outcomes[r].status, HVD_OK) << outcomes[r].message;
    ASSERT_EQ(b.recv[r][0], 3);  // 1 + 1 + 1, little-endian int32
  }
}

// A team's failure names the world rank of the peer, not its team rank.
TEST_P(FailureTest, FailuresNameWorldRanks) {
  const std::vector<int32_t> members = {4, 0, 2};
  Buffers b;
  RunOptions options;
  options.before_post = [](int32_t r) { return r != 1; };  // world rank 0
  options.meanwhile = [](const std::vector<hvd_task*>& tasks, Fabric& f) {
    f.fail_rank(0);
    for (hvd_task* t : tasks) {
      if (t) plugin(GetParam()).api().abort_task(t, HVD_ERR_PEER_FAILED, 0);
    }
  };
  const auto outcomes =
      run_collective(reducers(GetParam(), 3), members, 5,
                     needs_everyone(HVD_COLL_ALLREDUCE, 3, 100, b), options);
  for (int32_t r : {0, 2}) {
    EXPECT_EQ(outcomes[r].status, HVD_ERR_PEER_FAILED) << outcomes[r].message;
    EXPECT_EQ(outcomes[r].completion.peer, 0) << outcomes[r].message;
  }
}

INSTANTIATE_TEST_SUITE_P(Reducers, FailureTest,
                         ::testing::Values("ring", "tree", "halving-doubling"),
                         param_name);

}  // namespace
}  // namespace hvd::test
