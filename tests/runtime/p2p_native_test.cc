// hvd_p2p_api.native / native_test over a fake transport that has a
// collectives extension: one communicator per team, created once; requests
// tested through the transport's test(); abort reaches the communicators;
// a team reached over two transports has no native collectives.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "fake_transport.h"
#include "p2p/engine.h"

namespace hvd::p2p {
namespace {

struct hvd_coll_comm_fake {
  std::vector<int32_t> members;
  hvd_status aborted = HVD_OK;
};

// What the fake extension saw.
struct Record {
  int create_calls = 0, creates = 0, destroys = 0;
  std::set<hvd_request*> pending;
  int storage = 0;  // a request is this address
};
Record* g_record = nullptr;

hvd_coll_comm_fake* fake(hvd_coll_comm* c) {
  return reinterpret_cast<hvd_coll_comm_fake*>(c);
}

hvd_status comm_create(hvd_transport*, const hvd_team* team,
                       hvd_coll_comm** out) {
  // The first call is not finished yet: the core must call again.
  if (g_record->create_calls++ == 0) return HVD_AGAIN;
  auto* c = new hvd_coll_comm_fake;
  c->members.assign(team->world_ranks, team->world_ranks + team->size);
  ++g_record->creates;
  *out = reinterpret_cast<hvd_coll_comm*>(c);
  return HVD_OK;
}

hvd_status comm_destroy(hvd_coll_comm* c) {
  ++g_record->destroys;
  delete fake(c);
  return HVD_OK;
}

int32_t supports(hvd_coll_comm*, hvd_collective, hvd_dtype, hvd_reduce_op,
                 hvd_mem_kind) {
  return 1;
}

hvd_status allreduce(hvd_coll_comm*, const void*, void*, size_t, hvd_dtype,
                     hvd_reduce_op, hvd_stream, hvd_request** req) {
  *req = reinterpret_cast<hvd_request*>(&g_record->storage);
  g_record->pending.insert(*req);
  return HVD_OK;
}

hvd_status comm_abort(hvd_coll_comm* c, hvd_status reason, int32_t) {
  fake(c)->aborted = reason;
  return HVD_OK;
}

hvd_transport_collectives make_collectives() {
  hvd_transport_collectives c{};
  c.struct_size = sizeof c;
  c.type = HVD_EXT_TRANSPORT_COLLECTIVES;
  c.comm_create = comm_create;
  c.comm_destroy = comm_destroy;
  c.supports = supports;
  c.allreduce = allreduce;
  c.comm_abort = comm_abort;
  return c;
}
const hvd_transport_collectives kCollectives = make_collectives();

hvd_status test_either(hvd_request* r, int32_t* done, hvd_completion* out) {
  if (g_record->pending.erase(r)) {
    *done = 1;
    out->status = HVD_OK;
    out->peer = -1;
    out->bytes = 24;
    return HVD_OK;
  }
  return fake_transport_api()->test(r, done, out);
}

hvd_transport_api make_api() {
  hvd_transport_api a = *fake_transport_api();
  a.ext = reinterpret_cast<const hvd_extension*>(&kCollectives);
  a.test = test_either;
  return a;
}
const hvd_transport_api kNativeApi = make_api();

struct P2pNative : ::testing::Test {
  void SetUp() override { g_record = &record; }
  void TearDown() override { g_record = nullptr; }
  Record record;
};

// Rank 0 of `size` ranks on one host, linked to every other rank over
// `api_of(peer)` (a fake connection whose other end nobody drives).
struct World {
  World(int32_t size, const std::vector<const hvd_transport_api*>& apis)
      : engine(0, size, 0) {
    std::vector<int32_t> ranks(size);
    for (int32_t r = 0; r < size; ++r) ranks[r] = r;
    team = std::make_unique<Team>(ranks, 0, std::vector<int>(size, 0), 0, 0);
    for (size_t i = 0; i < apis.size(); ++i) {
      hvd_transport_s* t = fake_transport(FakeOptions{});
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
    World w(3, {&kNativeApi});
    const hvd_p2p_api* api = Engine::api();
    ASSERT_TRUE(HVD_HAS_FIELD(api, hvd_p2p_api, native_test));
    hvd_coll_comm* comm = nullptr;
    const hvd_transport_collectives* ext = api->native(&w.p, &comm);
    ASSERT_EQ(ext, &kCollectives);
    ASSERT_NE(comm, nullptr);
    EXPECT_EQ(fake(comm)->members, (std::vector<int32_t>{0, 1, 2}));
    hvd_coll_comm* again = nullptr;
    EXPECT_EQ(api->native(&w.p, &again), ext);
    EXPECT_EQ(again, comm);
    EXPECT_EQ(record.creates, 1);

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
    EXPECT_EQ(fake(sub_comm)->members, (std::vector<int32_t>{0, 2}));
    EXPECT_EQ(record.creates, 2);

    w.engine.abort(HVD_ERR_PEER_FAILED, 2);
    EXPECT_EQ(fake(comm)->aborted, HVD_ERR_PEER_FAILED);
    EXPECT_EQ(fake(sub_comm)->aborted, HVD_ERR_PEER_FAILED);
  }
  EXPECT_EQ(record.destroys, 2);  // when the engine went
}

TEST_F(P2pNative, NoneForATeamOverTwoTransports) {
  World w(3, {&kNativeApi, &kNativeApi});
  hvd_coll_comm* comm = nullptr;
  EXPECT_EQ(Engine::api()->native(&w.p, &comm), nullptr);
  EXPECT_EQ(record.creates, 0);
  // The sub-team that one transport reaches has them.
  int32_t members[] = {0, 1};
  hvd_p2p* sub = nullptr;
  ASSERT_EQ(Engine::api()->subteam(&w.p, members, 2, &sub), HVD_OK);
  EXPECT_NE(Engine::api()->native(sub, &comm), nullptr);
}

}  // namespace
}  // namespace hvd::p2p
