// hvd_p2p_api.native / native_test over a fake transport that has a
// collectives extension: one communicator per team, created once; requests
// tested through the transport's test(); abort reaches the communicators;
// a team reached over two transports has no native collectives.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "fake_transport.h"
#include "p2p/engine.h"

namespace hvd::p2p {
namespace {

struct P2pNative : ::testing::Test {
  // A transport whose first comm_create is not finished yet: the core must
  // call again.
  FakeOptions counted() {
    FakeOptions o;
    o.collectives_log = &log;
    o.create_again_first = true;
    return o;
  }
  FakeCollectivesLog log;
};

// Rank 0 of `size` ranks on one host, linked to every other rank over one
// of `apis` in turn (a fake connection whose other end nobody drives).
struct World {
  World(int32_t size, const std::vector<const hvd_transport_api*>& apis,
        FakeOptions options = {})
      : engine(0, size, 0) {
    std::vector<int32_t> ranks(size);
    for (int32_t r = 0; r < size; ++r) ranks[r] = r;
    team = std::make_unique<Team>(ranks, 0, std::vector<int>(size, 0), 0, 0);
    for (size_t i = 0; i < apis.size(); ++i) {
      hvd_transport_s* t = fake_transport(options);
      transports.push_back(engine.add_transport(std::make_unique<Transport>(
          "intra", "transport 'fake'", apis[i], t, nullptr)));
      others.push_back(fake_transport(FakeOptions{}));
    }
    for (int32_t peer = 1; peer < size; ++peer) {
      size_t which = static_cast<size_t>(peer - 1) % apis.size();
      hvd_conn_s *mine, *theirs;
      fake_connect(
          reinterpret_cast<hvd_transport_s*>(transports[which]->instance()), 0,
          others[which], peer, &mine, &theirs);
      engine.add_link(peer, transports[which], mine);
    }
    engine.reset_context(&p, team.get(), 0, 1);
  }
  ~World() {
    for (hvd_transport_s* t : others) fake_transport_api()->finalize(t);
  }
  Engine engine;
  std::unique_ptr<Team> team;
  std::vector<Transport*> transports;
  std::vector<hvd_transport_s*> others;
  hvd_p2p_s p;
};

TEST_F(P2pNative, NoneWithoutAnExtension) {
  World w(2, {fake_transport_api()});
  hvd_coll_comm* comm = reinterpret_cast<hvd_coll_comm*>(&w);
  EXPECT_EQ(Engine::api()->native(&w.p, &comm), nullptr);
  EXPECT_EQ(comm, nullptr);
}

TEST_F(P2pNative, OneCommunicatorPerTeamAndTestThroughTheTransport) {
  {
    World w(3, {fake_collectives_transport_api()}, counted());
    const hvd_p2p_api* api = Engine::api();
    ASSERT_TRUE(HVD_HAS_FIELD(api, hvd_p2p_api, native_test));
    hvd_coll_comm* comm = nullptr;
    const hvd_transport_collectives* ext = api->native(&w.p, &comm);
    ASSERT_EQ(ext, fake_collectives());
    ASSERT_NE(comm, nullptr);
    EXPECT_EQ(fake_comm(comm)->members, (std::vector<int32_t>{0, 1, 2}));
    hvd_coll_comm* again = nullptr;
    EXPECT_EQ(api->native(&w.p, &again), ext);
    EXPECT_EQ(again, comm);
    EXPECT_EQ(log.creates, 1);

    float data[6] = {};
    hvd_request* req = nullptr;
    ASSERT_EQ(ext->allreduce(comm, data, data, 6, HVD_FLOAT32, HVD_OP_SUM,
                             nullptr, &req),
              HVD_OK);
    int32_t done = 0;
    hvd_completion c{};
    c.struct_size = sizeof c;
    ASSERT_EQ(api->native_test(&w.p, req, &done, &c), HVD_OK);
    EXPECT_EQ(done, 1);
    EXPECT_EQ(c.status, HVD_OK);
    EXPECT_EQ(c.bytes, 24u);

    // A sub-team gets a communicator of its own.
    int32_t members[] = {0, 2};
    hvd_p2p* sub = nullptr;
    ASSERT_EQ(api->subteam(&w.p, members, 2, &sub), HVD_OK);
    hvd_coll_comm* sub_comm = nullptr;
    EXPECT_EQ(api->native(sub, &sub_comm), ext);
    ASSERT_NE(sub_comm, nullptr);
    EXPECT_EQ(fake_comm(sub_comm)->members, (std::vector<int32_t>{0, 2}));
    EXPECT_EQ(log.creates, 2);

    w.engine.abort(HVD_ERR_PEER_FAILED, 2);
    EXPECT_EQ(fake_comm(comm)->aborted, HVD_ERR_PEER_FAILED);
    EXPECT_EQ(fake_comm(sub_comm)->aborted, HVD_ERR_PEER_FAILED);
  }
  EXPECT_EQ(log.destroys, 2);  // when the engine went
}

// A member that never joins (stopped before it created its side): the
// creation ends once the engine is interrupted, not at the 30 s timeout.
TEST_F(P2pNative, CreationEndsWhenTheEngineIsInterrupted) {
  FakeOptions never;
  never.create_never_done = true;
  World w(2, {fake_collectives_transport_api()}, never);
  const auto start = std::chrono::steady_clock::now();
  w.engine.set_interrupted([&] {
    return std::chrono::steady_clock::now() - start >
           std::chrono::milliseconds(100);
  });
  hvd_coll_comm* comm = nullptr;
  EXPECT_EQ(Engine::api()->native(&w.p, &comm), nullptr);
  EXPECT_EQ(comm, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            NativeComms::kCreateTimeout / 3);
}

TEST_F(P2pNative, NoneForATeamOverTwoTransports) {
  World w(3,
          {fake_collectives_transport_api(), fake_collectives_transport_api()},
          counted());
  hvd_coll_comm* comm = nullptr;
  EXPECT_EQ(Engine::api()->native(&w.p, &comm), nullptr);
  EXPECT_EQ(log.creates, 0);
  // The sub-team that one transport reaches has them.
  int32_t members[] = {0, 1};
  hvd_p2p* sub = nullptr;
  ASSERT_EQ(Engine::api()->subteam(&w.p, members, 2, &sub), HVD_OK);
  EXPECT_NE(Engine::api()->native(sub, &comm), nullptr);
}

}  // namespace
}  // namespace hvd::p2p
