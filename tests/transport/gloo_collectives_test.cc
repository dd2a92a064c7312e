// The gloo transport's collectives extension over ranks as threads: every
// collective it offers against a reference, what it declines, a collective
// a member never joins (it must time out, not hang), abort, and its table's
// checks of [transport.gloo].
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "collectives_member.h"
#include "horovod/transport.h"
#include "plugin_path.h"
#include "thread_world.h"

namespace hvd_transport_test {
namespace {

using Clock = std::chrono::steady_clock;

const hvd_transport_api& gloo_api() {
  static const hvd_transport_api& api = transport_api("gloo");
  return api;
}

// One rank's transport and its communicator over the whole world; the
// wait sleeps on the wait fd between tests, as the core does.
struct Member : CollectivesMember {
  explicit Member(hvd_conformance::World& world)
      : CollectivesMember(gloo_api(), world, *world.host(),
                          std::chrono::milliseconds(1)) {}
};

void run(int ranks, std::vector<Setting> settings,
         const std::function<void(hvd_conformance::World&, Member&)>& body) {
  ThreadJob job(ranks, "gloo", std::move(settings));
  job.run([&](hvd_conformance::World& world) {
    Member m(world);
    body(world, m);
  });
}

class GlooCollectives : public ::testing::TestWithParam<int> {};

TEST_P(GlooCollectives, EveryOffer) {
  run(GetParam(), {setting("interface", "lo")},
      [](hvd_conformance::World& w, Member& m) {
        const int rank = w.rank(), size = w.size();
        // allreduce, out of place and in place, on this thread: in two
        // rounds (this one, split unevenly) and in one (the next).
        const size_t n = 30011;
        std::vector<float> in(n), out(n);
        for (size_t i = 0; i < n; ++i) in[i] = float(rank + 1) * float(i % 7);
        hvd_request* r = nullptr;
        ASSERT_EQ(m.coll.allreduce(m.comm, in.data(), out.data(), n,
                                   HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
                  HVD_OK);
        hvd_completion c = m.wait(r);
        ASSERT_EQ(c.status, HVD_OK);
        EXPECT_EQ(c.bytes, n * sizeof(float));
        float ranks_sum = float(size * (size + 1) / 2);
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(out[i], ranks_sum * float(i % 7)) << "element " << i;
        }
        // Large enough for Gloo's own allreduce on the comm's thread (the
        // one above runs on this thread), in place.
        std::vector<float> big((size_t{1} << 20) + 3);
        for (size_t i = 0; i < big.size(); ++i) {
          big[i] = float(rank + 1) * float(i % 5);
        }
        ASSERT_EQ(m.coll.allreduce(m.comm, big.data(), big.data(), big.size(),
                                   HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
                  HVD_OK);
        ASSERT_EQ(m.wait(r).status, HVD_OK);
        for (size_t i = 0; i < big.size(); ++i) {
          ASSERT_EQ(big[i], ranks_sum * float(i % 5)) << "element " << i;
        }
        std::vector<int64_t> mx = {rank, -rank, 5};
        ASSERT_EQ(m.coll.allreduce(m.comm, mx.data(), mx.data(), 3, HVD_INT64,
                                   HVD_OP_MAX, nullptr, &r),
                  HVD_OK);
        ASSERT_EQ(m.wait(r).status, HVD_OK);
        EXPECT_EQ(mx, (std::vector<int64_t>{size - 1, 0, 5}));

        // allgatherv: rank r gives r + 1 elements.
        std::vector<size_t> counts(size), displs(size);
        size_t total = 0;
        for (int p = 0; p < size; ++p) {
          counts[p] = size_t(p + 1);
          displs[p] = total;
          total += counts[p];
        }
        std::vector<int32_t> mine(rank + 1, 100 + rank), all(total, -1);
        ASSERT_EQ(m.coll.allgatherv(m.comm, mine.data(), mine.size(),
                                    all.data(), counts.data(), displs.data(),
                                    HVD_INT32, nullptr, &r),
                  HVD_OK);
        ASSERT_EQ(m.wait(r).status, HVD_OK);
        for (int p = 0; p < size; ++p) {
          for (size_t i = 0; i < counts[p]; ++i) {
            EXPECT_EQ(all[displs[p] + i], 100 + p);
          }
        }

        // broadcast from the last rank.
        std::vector<double> b(1000, rank == size - 1 ? 2.5 : 0.0);
        ASSERT_EQ(m.coll.broadcast(m.comm, b.data(), b.size(), HVD_FLOAT64,
                                   size - 1, nullptr, &r),
                  HVD_OK);
        ASSERT_EQ(m.wait(r).status, HVD_OK);
        for (double v : b) ASSERT_EQ(v, 2.5);

        // alltoallv: rank r sends p + 1 bytes of value r to rank p.
        std::vector<size_t> sc(size), sd(size), rc(size), rd(size);
        size_t st = 0, rt = 0;
        for (int p = 0; p < size; ++p) {
          sc[p] = size_t(p + 1);
          sd[p] = st;
          st += sc[p];
          rc[p] = size_t(rank + 1);
          rd[p] = rt;
          rt += rc[p];
        }
        std::vector<uint8_t> send(st, uint8_t(rank)), recv(rt, 0xff);
        ASSERT_EQ(m.coll.alltoallv(m.comm, send.data(), sc.data(), sd.data(),
                                   recv.data(), rc.data(), rd.data(), HVD_UINT8,
                                   nullptr, &r),
                  HVD_OK);
        ASSERT_EQ(m.wait(r).status, HVD_OK);
        for (int p = 0; p < size; ++p) {
          for (size_t i = 0; i < rc[p]; ++i) EXPECT_EQ(recv[rd[p] + i], p);
        }

        ASSERT_EQ(m.coll.barrier(m.comm, &r), HVD_OK);
        ASSERT_EQ(m.wait(r).status, HVD_OK);
      });
}

TEST_P(GlooCollectives, DeclinesWhatGlooCannotDo) {
  run(GetParam(), {}, [](hvd_conformance::World&, Member& m) {
    m.expect_offers({
        {HVD_COLL_ALLREDUCE, HVD_FLOAT32, HVD_OP_SUM, HVD_MEM_HOST, 1},
        {HVD_COLL_ALLREDUCE, HVD_FLOAT32, HVD_OP_SUM, HVD_MEM_CUDA, 0},
        {HVD_COLL_ALLREDUCE, HVD_BFLOAT16, HVD_OP_SUM, HVD_MEM_HOST, 0},
        {HVD_COLL_ALLREDUCE, HVD_FLOAT32, HVD_OP_ADASUM, HVD_MEM_HOST, 0},
        {HVD_COLL_REDUCESCATTER, HVD_FLOAT32, HVD_OP_SUM, HVD_MEM_HOST, 0},
    });
    EXPECT_EQ(m.coll.reducescatter, nullptr);
    // Blocks with gaps between them are not Gloo's allgatherv.
    const int size = m.team.size;
    std::vector<size_t> counts(size, 1), displs(size);
    for (int p = 0; p < size; ++p) displs[p] = size_t(2 * p);
    std::vector<float> in(1), out(2 * size);
    hvd_request* r = nullptr;
    EXPECT_EQ(m.coll.allgatherv(m.comm, in.data(), 1, out.data(), counts.data(),
                                displs.data(), HVD_FLOAT32, nullptr, &r),
              HVD_ERR_UNSUPPORTED);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooCollectives, ::testing::Values(2, 3));

// Rank 0 joins a collective the others never post: Gloo's timeout ends it
// with an error instead of a hang.
TEST(GlooCollectiveFailure, AbsentMemberTimesOut) {
  run(2, {setting("timeout", "1s")}, [](hvd_conformance::World& w, Member& m) {
    if (w.rank() == 0) {
      std::vector<float> x(16, 1.0f);
      hvd_request* r = nullptr;
      ASSERT_EQ(m.coll.allreduce(m.comm, x.data(), x.data(), x.size(),
                                 HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
                HVD_OK);
      hvd_completion c = m.wait(r);
      EXPECT_EQ(c.status, HVD_ERR_TIMEOUT);
    }
    w.barrier("timed-out", std::chrono::seconds(30));
  });
}

// An abort from another thread ends a collective that cannot finish at
// once, with the reason and peer given; later ones fail the same way. This
// one is large, so it runs on the comm's thread.
TEST(GlooCollectiveFailure, AbortEndsTheRunningCollective) {
  run(2, {setting("timeout", "3s")}, [](hvd_conformance::World& w, Member& m) {
    if (w.rank() == 0) {
      std::vector<float> x(size_t{1} << 21, 1.0f);
      hvd_request* r = nullptr;
      ASSERT_EQ(m.coll.allreduce(m.comm, x.data(), x.data(), x.size(),
                                 HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
                HVD_OK);
      auto start = Clock::now();
      std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        m.coll.comm_abort(m.comm, HVD_ERR_ABORTED, 1);
        m.coll.comm_abort(m.comm, HVD_ERR_TIMEOUT, 7);
      });
      hvd_completion c = m.wait(r);
      aborter.join();
      EXPECT_EQ(c.status, HVD_ERR_ABORTED);
      EXPECT_EQ(c.peer, 1);
      EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
      ASSERT_EQ(m.coll.barrier(m.comm, &r), HVD_OK);
      c = m.wait(r);
      EXPECT_EQ(c.status, HVD_ERR_ABORTED);
    }
    w.barrier("aborted", std::chrono::seconds(30));
  });
}

// An allreduce of up to a few MiB runs on the caller's thread; an abort
// from another thread ends it at once too, with the reason and peer given,
// in one round (16 elements) and in two (1 MiB).
TEST(GlooCollectiveFailure, AbortEndsAnAllreduceOnTheCallingThread) {
  for (size_t count : {size_t{16}, size_t{1} << 18}) {
    run(2, {setting("timeout", "3s")},
        [&](hvd_conformance::World& w, Member& m) {
          if (w.rank() == 0) {
            std::vector<float> x(count, 1.0f);
            auto start = Clock::now();
            std::thread aborter([&] {
              std::this_thread::sleep_for(std::chrono::milliseconds(50));
              m.coll.comm_abort(m.comm, HVD_ERR_ABORTED, 1);
              m.coll.comm_abort(m.comm, HVD_ERR_TIMEOUT, 7);
            });
            hvd_request* r = nullptr;
            ASSERT_EQ(m.coll.allreduce(m.comm, x.data(), x.data(), x.size(),
                                       HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
                      HVD_OK);
            hvd_completion c = m.wait(r);
            aborter.join();
            EXPECT_EQ(c.status, HVD_ERR_ABORTED) << count;
            EXPECT_EQ(c.peer, 1);
            EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
            ASSERT_EQ(m.coll.allreduce(m.comm, x.data(), x.data(), x.size(),
                                       HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
                      HVD_OK);
            EXPECT_EQ(m.wait(r).status, HVD_ERR_ABORTED);
          }
          w.barrier("aborted", std::chrono::seconds(30));
        });
  }
}

TEST(GlooOptions, BadValuesAreConfigurationErrors) {
  for (const Setting& bad :
       {setting("timeout", "soon"), setting("interface", "no-such-interface0"),
        setting("max_requests", 0), setting("streams", 4)}) {
    ThreadJob job(1, "gloo", {bad});
    job.run([&](hvd_conformance::World& w) {
      hvd_transport* t = nullptr;
      hvd_status s = gloo_api().init(w.host(), &t);
      EXPECT_EQ(s, HVD_ERR_CONFIG) << bad.key;
      EXPECT_NE(std::string(gloo_api().last_error(nullptr)).find(bad.key),
                std::string::npos)
          << gloo_api().last_error(nullptr);
      if (s == HVD_OK) gloo_api().finalize(t);
    });
  }
}

TEST(GlooOptions, TimeoutTakesSecondsOrADuration) {
  for (const Setting& good :
       {setting("timeout", "1500ms"), setting("timeout", "2"),
        setting("timeout", int64_t{5}), setting("timeout", "1m")}) {
    ThreadJob job(1, "gloo", {good});
    job.run([&](hvd_conformance::World& w) {
      hvd_transport* t = nullptr;
      ASSERT_EQ(gloo_api().init(w.host(), &t), HVD_OK)
          << gloo_api().last_error(nullptr);
      gloo_api().finalize(t);
    });
  }
}

TEST(GlooInfo, DescribesTheLibrary) {
  auto* info = find_extension<hvd_plugin_info>(gloo_api(), HVD_EXT_PLUGIN_INFO);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(std::string(info->describe()).rfind("Gloo ", 0), 0u)
      << info->describe();
}

}  // namespace
}  // namespace hvd_transport_test
