// The shm transport's collectives extension over ranks as threads: allreduce
// for every dtype and op against a reduction in team order (one-shot and
// two-shot, sizes across slots and shares, in place, several posted at
// once), the same bits on every rank, broadcast, allgatherv, barrier, what
// it declines, and abort while a member never arrives.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "collectives_member.h"
#include "device/device.h"
#include "device/half.h"
#include "horovod/transport.h"
#include "horovod_plugin/enums.h"
#include "plugin_path.h"
#include "thread_world.h"

namespace hvd_transport_test {
namespace {

using hvd_conformance::Bytes;
using hvd_conformance::World;

const hvd_transport_api& shm_api() {
  static const hvd_transport_api& api = transport_api("shm");
  return api;
}

// The world's host table with the core's device layer in it, as the core
// gives it to a transport.
hvd_host with_device(const hvd_host& world_host) {
  hvd_host host = world_host;
  host.device = hvd::device_api();
  return host;
}

// One rank's transport and its communicator over the whole world; the
// wait spins a little before it sleeps on the wait fd.
struct Member : CollectivesMember {
  explicit Member(World& world)
      : CollectivesMember(shm_api(), world, with_device(*world.host())) {
    wait_spins = 200;
  }
};

void run(int ranks, std::vector<Setting> settings,
         const std::function<void(World&, Member&)>& body) {
  ThreadJob job(ranks, "shm", std::move(settings));
  job.run([&](World& world) {
    Member m(world);
    body(world, m);
  });
}

// Element i of rank r: small values, fractional for the float types (so
// the order of a sum shows in its bits), never NaN.
void fill(hvd_dtype dtype, hvd_reduce_op op, int rank, size_t i, uint8_t* at) {
  int v = static_cast<int>((i * 7 + rank * 13) % 11) - 5;
  if (op == HVD_OP_PRODUCT) v = v % 2 == 0 ? 1 : (v < 0 ? -1 : 2);
  const float f = static_cast<float>(v) * 0.37f + 0.01f * rank;
  switch (dtype) {
    case HVD_UINT8:
    case HVD_INT8:
      *at = static_cast<uint8_t>(dtype == HVD_UINT8 && v < 0 ? -v : v);
      break;
    case HVD_BOOL:
      *at = v > 0 ? 1 : 0;
      break;
    case HVD_UINT16:
    case HVD_INT16: {
      auto x = static_cast<int16_t>(dtype == HVD_UINT16 && v < 0 ? -v : v);
      std::memcpy(at, &x, 2);
      break;
    }
    case HVD_FLOAT16: {
      uint16_t h = hvd::float_to_half(f);
      std::memcpy(at, &h, 2);
      break;
    }
    case HVD_BFLOAT16: {
      uint16_t b = hvd::float_to_bfloat16(f);
      std::memcpy(at, &b, 2);
      break;
    }
    case HVD_INT32: {
      int32_t x = v;
      std::memcpy(at, &x, 4);
      break;
    }
    case HVD_FLOAT32:
      std::memcpy(at, &f, 4);
      break;
    case HVD_INT64: {
      int64_t x = v;
      std::memcpy(at, &x, 8);
      break;
    }
    case HVD_FLOAT64: {
      double d = static_cast<double>(f) / 3.0;
      std::memcpy(at, &d, 8);
      break;
    }
    default:
      break;
  }
}

Bytes input(hvd_dtype dtype, hvd_reduce_op op, int rank, size_t count) {
  size_t es = hvd_plugin::dtype_size(dtype);
  Bytes b(count * es);
  for (size_t i = 0; i < count; ++i) fill(dtype, op, rank, i, &b[i * es]);
  return b;
}

// What every rank must hold: the inputs reduced in team order.
Bytes reference(hvd_dtype dtype, hvd_reduce_op op, int size, size_t count) {
  Bytes acc = input(dtype, op, 0, count);
  for (int r = 1; r < size; ++r) {
    Bytes next = input(dtype, op, r, count);
    hvd::reduce_host(dtype, op, acc.data(), acc.data(), next.data(), count);
  }
  return acc;
}

const hvd_reduce_op kOps[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX,
                              HVD_OP_PRODUCT};

// A small slot (4 KiB) and one-shot limit (1 KiB), so modest counts cross
// the one-shot limit, run many rounds and leave short and empty shares.
std::vector<Setting> small_slots() {
  return {setting("collective_slot_size", "4KiB"),
          setting("one_shot_max", "1KiB")};
}

void check_allreduce(World& w, Member& m, hvd_dtype dtype, hvd_reduce_op op,
                     size_t count, bool in_place) {
  const size_t es = hvd_plugin::dtype_size(dtype);
  Bytes send = input(dtype, op, w.rank(), count);
  Bytes recv(count * es, 0xEE);
  uint8_t* out = in_place ? send.data() : recv.data();
  hvd_request* r = nullptr;
  ASSERT_EQ(
      m.coll.allreduce(m.comm, send.data(), out, count, dtype, op, nullptr, &r),
      HVD_OK)
      << m.api.last_error(m.t);
  std::string what = std::string(hvd_plugin::dtype_name(dtype)) + " " +
                     hvd_plugin::op_name(op) + " x" + std::to_string(count) +
                     (in_place ? " in place" : "");
  m.expect_ok(r, what);
  Bytes got(out, out + count * es);
  EXPECT_TRUE(got == reference(dtype, op, w.size(), count)) << what;
  // The same bits on every rank.
  std::vector<Bytes> all =
      w.allgather("ar " + what, got, std::chrono::seconds(30));
  for (int peer = 1; peer < w.size(); ++peer) {
    EXPECT_TRUE(all[peer] == all[0]) << what << ": rank " << peer;
  }
}

class ShmCollectives : public ::testing::TestWithParam<int> {};

TEST_P(ShmCollectives, AllreduceEveryDtypeAndOp) {
  run(GetParam(), small_slots(), [](World& w, Member& m) {
    for (int d = 0; d < HVD_DTYPE_COUNT; ++d) {
      for (hvd_reduce_op op : kOps) {
        for (size_t count : {size_t(0), size_t(1), size_t(13), size_t(1021)}) {
          check_allreduce(w, m, static_cast<hvd_dtype>(d), op, count, false);
        }
      }
    }
  });
}

TEST_P(ShmCollectives, AllreduceAcrossSlotsAndShares) {
  run(GetParam(), small_slots(), [](World& w, Member& m) {
    // float32: the one-shot limit is 256 elements and a round 1024 (4 KiB)
    // or a little less, so these straddle both and leave tails of every
    // length.
    for (size_t count : {255, 256, 257, 1023, 1024, 1025, 2047, 4099, 10007}) {
      check_allreduce(w, m, HVD_FLOAT32, HVD_OP_SUM, count, false);
      check_allreduce(w, m, HVD_FLOAT32, HVD_OP_SUM, count, true);
    }
    // In place around the inline limit (56 bytes): a member past the
    // second must read its part from its slot, its input being the result.
    for (size_t count : {1, 13, 14, 15}) {
      check_allreduce(w, m, HVD_FLOAT32, HVD_OP_SUM, count, true);
    }
    check_allreduce(w, m, HVD_FLOAT64, HVD_OP_MAX, 3001, true);
    check_allreduce(w, m, HVD_UINT8, HVD_OP_SUM, 9973, false);
    check_allreduce(w, m, HVD_FLOAT16, HVD_OP_SUM, 5003, false);
  });
}

TEST_P(ShmCollectives, DefaultSlotsLargeAllreduce) {
  run(GetParam(), {}, [](World& w, Member& m) {
    // With the default 1 MiB slots: one-shot, then two-shot of several
    // rounds with streaming copies (8 MiB and up).
    for (size_t count : {size_t(8191), size_t(300007), size_t(2100007)}) {
      check_allreduce(w, m, HVD_FLOAT32, HVD_OP_SUM, count, count % 2 == 0);
    }
  });
}

TEST_P(ShmCollectives, SeveralInFlight) {
  run(GetParam(), small_slots(), [](World& w, Member& m) {
    // Posted back to back, waited for in reverse: they run in order.
    const size_t counts[] = {3, 700, 2500, 1, 9000, 64};
    std::vector<Bytes> sends, recvs;
    std::vector<hvd_request*> reqs;
    for (size_t c : counts) {
      sends.push_back(input(HVD_FLOAT32, HVD_OP_SUM, w.rank(), c));
      recvs.emplace_back(c * 4);
    }
    for (size_t i = 0; i < sends.size(); ++i) {
      hvd_request* r = nullptr;
      ASSERT_EQ(
          m.coll.allreduce(m.comm, sends[i].data(), recvs[i].data(), counts[i],
                           HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
          HVD_OK);
      reqs.push_back(r);
    }
    for (size_t i = reqs.size(); i-- > 0;) {
      m.expect_ok(reqs[i], "allreduce " + std::to_string(i));
      EXPECT_TRUE(recvs[i] ==
                  reference(HVD_FLOAT32, HVD_OP_SUM, w.size(), counts[i]))
          << "allreduce " << i;
    }
  });
}

TEST_P(ShmCollectives, SmallOnesPassLargeOnes) {
  run(GetParam(), small_slots(), [](World& w, Member& m) {
    // Rank 0 posts a large allreduce and then a small one; the others post
    // the large one only once the small one is done. A small collective
    // must not wait behind a large one, or this never finishes.
    const size_t large = 20000, small = 10;
    Bytes big_in = input(HVD_FLOAT32, HVD_OP_SUM, w.rank(), large);
    Bytes tiny_in = input(HVD_FLOAT32, HVD_OP_SUM, w.rank(), small);
    Bytes big_out(large * 4), tiny_out(small * 4);
    hvd_request *big = nullptr, *tiny = nullptr;
    auto post_big = [&] {
      ASSERT_EQ(m.coll.allreduce(m.comm, big_in.data(), big_out.data(), large,
                                 HVD_FLOAT32, HVD_OP_SUM, nullptr, &big),
                HVD_OK);
    };
    if (w.rank() == 0) post_big();
    ASSERT_EQ(m.coll.allreduce(m.comm, tiny_in.data(), tiny_out.data(), small,
                               HVD_FLOAT32, HVD_OP_SUM, nullptr, &tiny),
              HVD_OK);
    m.expect_ok(tiny, "small allreduce");
    if (w.rank() != 0) post_big();
    m.expect_ok(big, "large allreduce");
    EXPECT_TRUE(tiny_out ==
                reference(HVD_FLOAT32, HVD_OP_SUM, w.size(), small));
    EXPECT_TRUE(big_out == reference(HVD_FLOAT32, HVD_OP_SUM, w.size(), large));
  });
}

TEST_P(ShmCollectives, BroadcastEveryRoot) {
  run(GetParam(), small_slots(), [](World& w, Member& m) {
    for (int root = 0; root < w.size(); ++root) {
      for (size_t count : {size_t(0), size_t(5), size_t(1024), size_t(7001)}) {
        Bytes expect = input(HVD_INT32, HVD_OP_SUM, root, count);
        Bytes buf = w.rank() == root ? expect : Bytes(count * 4, 0);
        hvd_request* r = nullptr;
        ASSERT_EQ(m.coll.broadcast(m.comm, buf.data(), count, HVD_INT32, root,
                                   nullptr, &r),
                  HVD_OK);
        std::string what = "broadcast from " + std::to_string(root) + " x" +
                           std::to_string(count);
        m.expect_ok(r, what);
        EXPECT_TRUE(buf == expect) << what;
      }
    }
  });
}

TEST_P(ShmCollectives, AllgathervAndBarrier) {
  run(GetParam(), small_slots(), [](World& w, Member& m) {
    const int n = w.size();
    // Counts differ per rank (one gives nothing); one block spans rounds.
    std::vector<size_t> counts(n), displs(n);
    size_t total = 0;
    for (int r = 0; r < n; ++r) {
      counts[r] = r == 1 ? 0 : (r == 0 ? 2600 : 17 * r + 3);
      displs[r] = total;
      total += counts[r];
    }
    Bytes send = input(HVD_FLOAT64, HVD_OP_SUM, w.rank(), counts[w.rank()]);
    Bytes recv(total * 8, 0);
    hvd_request* r = nullptr;
    ASSERT_EQ(m.coll.allgatherv(m.comm, send.data(), counts[w.rank()],
                                recv.data(), counts.data(), displs.data(),
                                HVD_FLOAT64, nullptr, &r),
              HVD_OK);
    m.expect_ok(r, "allgatherv");
    for (int peer = 0; peer < n; ++peer) {
      Bytes block(recv.begin() + displs[peer] * 8,
                  recv.begin() + (displs[peer] + counts[peer]) * 8);
      EXPECT_TRUE(block == input(HVD_FLOAT64, HVD_OP_SUM, peer, counts[peer]))
          << "block of rank " << peer;
    }
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(m.coll.barrier(m.comm, &r), HVD_OK);
      m.expect_ok(r, "barrier");
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmCollectives,
                         ::testing::Values(1, 2, 3, 4, 5));

TEST(ShmCollectivesOffer, DeclinesWhatItLacks) {
  run(2, {}, [](World&, Member& m) {
    m.expect_offers({
        {HVD_COLL_ALLREDUCE, HVD_FLOAT32, HVD_OP_SUM, HVD_MEM_HOST, 1},
        {HVD_COLL_ALLREDUCE, HVD_FLOAT32, HVD_OP_SUM, HVD_MEM_CUDA, 0},
        {HVD_COLL_ALLREDUCE, HVD_FLOAT32, HVD_OP_ADASUM, HVD_MEM_HOST, 0},
        {HVD_COLL_REDUCESCATTER, HVD_FLOAT32, HVD_OP_SUM, HVD_MEM_HOST, 0},
        {HVD_COLL_ALLTOALL, HVD_FLOAT32, HVD_OP_SUM, HVD_MEM_HOST, 0},
    });
    hvd_request* r = nullptr;
    float x = 1;
    EXPECT_EQ(m.coll.allreduce(m.comm, &x, &x, 1, HVD_FLOAT32, HVD_OP_ADASUM,
                               nullptr, &r),
              HVD_ERR_UNSUPPORTED);
  });
}

TEST(ShmCollectivesOffer, BadSettingsAreRejected) {
  ThreadJob job(1, "shm", {setting("collective_slot_size", "5000")});
  job.run([&](World& world) {
    hvd_transport* t = nullptr;
    EXPECT_EQ(shm_api().init(world.host(), &t), HVD_ERR_CONFIG);
  });
  ASSERT_EQ(job.config_errors(0).size(), 1u);
  EXPECT_NE(job.config_errors(0)[0].find("collective_slot_size"),
            std::string::npos);
}

// A member that never posts: the others' collective must end with the
// abort's reason (the core's failure detector calls comm_abort), posts
// after it fail at once, and the transport's own abort does the same.
TEST(ShmCollectivesAbort, PendingCollectiveEndsWithTheReason) {
  run(3, {}, [](World& w, Member& m) {
    if (w.rank() == 2) {
      w.barrier("posted", std::chrono::seconds(30));
      w.barrier("checked", std::chrono::seconds(30));
      return;
    }
    std::vector<float> buf(100, 1.0f);
    hvd_request* r = nullptr;
    ASSERT_EQ(m.coll.allreduce(m.comm, buf.data(), buf.data(), buf.size(),
                               HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
              HVD_OK);
    w.barrier("posted", std::chrono::seconds(30));
    std::thread detector([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      m.coll.comm_abort(m.comm, HVD_ERR_PEER_FAILED, 2);
    });
    hvd_completion c = m.wait(r);
    detector.join();
    EXPECT_EQ(c.status, HVD_ERR_PEER_FAILED);
    EXPECT_EQ(c.peer, 2);
    EXPECT_EQ(m.coll.barrier(m.comm, &r), HVD_ERR_PEER_FAILED);
    w.barrier("checked", std::chrono::seconds(30));
  });
}

TEST(ShmCollectivesAbort, TransportAbortEndsPendingCollectives) {
  run(2, {}, [](World& w, Member& m) {
    if (w.rank() == 1) {
      w.barrier("posted", std::chrono::seconds(30));
      return;
    }
    std::vector<float> buf(100000, 1.0f);
    hvd_request* r = nullptr;
    ASSERT_EQ(m.coll.allreduce(m.comm, buf.data(), buf.data(), buf.size(),
                               HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
              HVD_OK);
    w.barrier("posted", std::chrono::seconds(30));
    std::thread other([&] { m.api.abort(m.t, HVD_ERR_TIMEOUT, 1); });
    hvd_completion c = m.wait(r);
    other.join();
    EXPECT_EQ(c.status, HVD_ERR_TIMEOUT);
    EXPECT_EQ(c.peer, 1);
  });
}

}  // namespace
}  // namespace hvd_transport_test
