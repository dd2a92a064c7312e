// The gpu scope: whether every rank opens the [transport] gpu transport,
// decided from what each rank published (agree_gpu_scope); how the engine
// routes a task on device memory to it (its connections, its native
// collectives) while host tasks keep the intra/inter transports; and
// whether ranks of a host share cores, from all their affinity masks.
#include "p2p/gpu_scope.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "fake_transport.h"
#include "p2p/core_sharing.h"
#include "p2p/engine.h"
#include "p2p/team.h"
#include "runtime/memory_route.h"

namespace hvd::p2p {
namespace {

GpuOffer opened(const char* name, bool listens = false) {
  return {name, "", listens, 1};
}
GpuOffer none(const char* why) { return {"", why, false, 0}; }

// One host per rank, one GPU each, unless the test says otherwise.
GpuScope agree(const std::vector<GpuOffer>& offers) {
  std::vector<int> host_of(offers.size());
  for (size_t r = 0; r < offers.size(); ++r) host_of[r] = static_cast<int>(r);
  return agree_gpu_scope(offers, host_of);
}

TEST(GpuScope, OpenWhenEveryRankOpenedTheSameTransport) {
  GpuScope s = agree({opened("nccl"), opened("nccl")});
  EXPECT_TRUE(s.open);
  EXPECT_EQ(s.name, "nccl");
  EXPECT_FALSE(s.connects);  // nccl has no listener: collectives only
  EXPECT_EQ(s.why_not, "");
  s = agree({opened("ucx", true), opened("ucx", true)});
  EXPECT_TRUE(s.open);
  EXPECT_TRUE(s.connects);
  // One rank without a listener: nobody connects over it.
  s = agree({opened("ucx", true), opened("ucx", false)});
  EXPECT_TRUE(s.open);
  EXPECT_FALSE(s.connects);
}

TEST(GpuScope, ClosedEverywhereWhenOneRankLacksTheDevice) {
  GpuScope s = agree({opened("nccl"), none("no CUDA device"), opened("nccl")});
  EXPECT_FALSE(s.open);
  EXPECT_EQ(s.why_not, "ranks 0, 2: opened 'nccl'; rank 1: no CUDA device");
}

TEST(GpuScope, ClosedEverywhereWhenTheTransportFailsToLoadSomewhere) {
  GpuScope s = agree(
      {none("transport.gpu: no transport could be used: 'nccl' failed: x"),
       opened("nccl")});
  EXPECT_FALSE(s.open);
  EXPECT_EQ(s.why_not,
            "rank 0: transport.gpu: no transport could be used: 'nccl' "
            "failed: x; rank 1: opened 'nccl'");
}

TEST(GpuScope, ClosedWhenAListFallbackWasTakenOnSomeRanksOnly) {
  GpuScope s = agree({opened("nccl"), opened("ucx", true)});
  EXPECT_FALSE(s.open);
  EXPECT_EQ(s.why_not,
            "the ranks opened different transports (rank 0: 'nccl'; rank 1: "
            "'ucx'; a fallback taken on some ranks only)");
}

TEST(GpuScope, OneReasonForEveryRank) {
  GpuScope s = agree(
      {none("no CUDA device"), none("no CUDA device"), none("no CUDA device")});
  EXPECT_FALSE(s.open);
  EXPECT_EQ(s.why_not, "every rank: no CUDA device");
  EXPECT_EQ(agree({none("no CUDA device")}).why_not, "rank 0: no CUDA device");
}

TEST(GpuScope, ClosedWhenRanksOfAHostOutnumberItsDevices) {
  // NCCL refuses two ranks on one GPU: stage instead.
  GpuScope s = agree_gpu_scope({opened("nccl"), opened("nccl")}, {0, 0});
  EXPECT_FALSE(s.open);
  EXPECT_EQ(s.why_not,
            "ranks 0, 1 share a host with 1 CUDA device(s): [transport] gpu "
            "needs one per rank");
  GpuOffer two = opened("nccl");
  two.devices = 2;
  EXPECT_TRUE(agree_gpu_scope({two, two, opened("nccl")}, {0, 0, 1}).open);
}

CpuMask cpus(std::initializer_list<int> list) {
  CpuMask m;
  for (int c : list) {
    if (m.size() <= static_cast<size_t>(c / 8)) m.resize(c / 8 + 1, 0);
    m[c / 8] |= static_cast<uint8_t>(1u << (c % 8));
  }
  return m;
}

TEST(CoreSharing, RanksBoundToCoresOfTheirOwnShareNothing) {
  // mpirun's binding at 2 ranks: each rank sees one core, its own.
  std::vector<CpuMask> masks = {cpus({0}), cpus({1})};
  EXPECT_FALSE(shares_cores(masks, {0, 0}, 0));
  EXPECT_FALSE(shares_cores(masks, {0, 0}, 1));
}

TEST(CoreSharing, MoreUnboundRanksThanCoresShare) {
  std::vector<CpuMask> two(2, cpus({0, 1})), four(4, cpus({0, 1}));
  EXPECT_FALSE(shares_cores(two, {0, 0}, 1));
  EXPECT_TRUE(shares_cores(four, {0, 0, 0, 0}, 2));
}

TEST(CoreSharing, OnlyRanksOnTheSameCoresCount) {
  // 3 ranks bound round-robin to 2 cores: ranks 0 and 2 share core 0.
  std::vector<CpuMask> masks = {cpus({0}), cpus({1}), cpus({0})};
  EXPECT_TRUE(shares_cores(masks, {0, 0, 0}, 0));
  EXPECT_FALSE(shares_cores(masks, {0, 0, 0}, 1));
  EXPECT_TRUE(shares_cores(masks, {0, 0, 0}, 2));
  // The same masks on other hosts are other cores.
  EXPECT_FALSE(shares_cores(masks, {0, 1, 2}, 0));
  // A rank free to run on both cores beside one bound to core 0.
  EXPECT_FALSE(shares_cores({cpus({0, 1}), cpus({0})}, {0, 0}, 1));
  EXPECT_GE(core_count(own_cpu_mask()), 1);
  EXPECT_EQ(core_count(cpus({0, 9, 63})), 3);
}

// ---- the engine with a gpu scope -----------------------------------------

// The fake collectives transport under another name, as a gpu transport.
const hvd_transport_api* gpu_api() {
  static const hvd_transport_api api = [] {
    hvd_transport_api a = *fake_collectives_transport_api();
    a.name = "fakegpu";
    return a;
  }();
  return &api;
}

// Rank 0 of 2, linked to rank 1 over a host transport and, when
// `gpu_links`, over a gpu transport too (both fakes; the other ends are
// never driven).
struct GpuWorld {
  explicit GpuWorld(bool gpu_links, bool gpu_needs_mr = false)
      : engine(0, 2, 0),
        team({0, 1}, 0, {0, 0}, 0, 0),
        other_host(fake_transport(FakeOptions{})),
        other_gpu(fake_transport(FakeOptions{})) {
    host = engine.add_transport(std::make_unique<Transport>(
        "intra", "transport 'fake'", fake_transport_api(),
        fake_transport(FakeOptions{}), nullptr));
    FakeOptions cuda;
    cuda.mem_kinds = HVD_MEM_BIT(HVD_MEM_CUDA);
    cuda.needs_mr = gpu_needs_mr;
    gpu = engine.add_gpu_transport(
        std::make_unique<Transport>("gpu", "transport 'fakegpu'", gpu_api(),
                                    fake_transport(cuda), nullptr));
    hvd_conn_s *mine, *theirs;
    fake_connect(fake(host), 0, other_host, 1, &mine, &theirs);
    engine.add_link(1, host, mine);
    if (gpu_links) {
      fake_connect(fake(gpu), 0, other_gpu, 1, &mine, &theirs);
      engine.add_link(1, gpu, mine);
    }
    engine.reset_context(&p, &team, 0, 1);
  }
  ~GpuWorld() {
    fake_transport_api()->finalize(other_host);
    fake_transport_api()->finalize(other_gpu);
  }
  static hvd_transport_s* fake(Transport* t) {
    return reinterpret_cast<hvd_transport_s*>(t->instance());
  }
  // Sends 4 bytes to team rank 1; the status of the isend.
  hvd_status send() {
    float x = 1;
    hvd_p2p_request* req = nullptr;
    hvd_status s = Engine::api()->isend(&p, 1, &x, sizeof x, 0, &req);
    if (s != HVD_OK) return s;
    int32_t done = 0;
    hvd_completion c{};
    c.struct_size = sizeof c;
    EXPECT_EQ(Engine::api()->test(&p, req, &done, &c), HVD_OK);
    EXPECT_EQ(done, 1);
    return HVD_OK;
  }
  Engine engine;
  Team team;
  hvd_transport_s *other_host, *other_gpu;
  Transport *host = nullptr, *gpu = nullptr;
  hvd_p2p_s p;
};

TEST(GpuScopeEngine, DeviceTasksGoOverTheGpuConnections) {
  GpuWorld w(true);
  EXPECT_TRUE(w.engine.gpu_connected(1));
  EXPECT_EQ(w.engine.transport_of(1), w.host);
  EXPECT_EQ(w.engine.gpu_transport(), w.gpu);
  Engine::set_memory(&w.p, {HVD_MEM_CUDA, 0});
  ASSERT_EQ(w.send(), HVD_OK);
  EXPECT_EQ(GpuWorld::fake(w.gpu)->sent.size(), 1u);
  EXPECT_EQ(GpuWorld::fake(w.host)->sent.size(), 0u);
  // A sub-team of the task inherits its memory.
  int32_t members[] = {0, 1};
  hvd_p2p* sub = nullptr;
  ASSERT_EQ(Engine::api()->subteam(&w.p, members, 2, &sub), HVD_OK);
  EXPECT_EQ(sub->memory.kind, HVD_MEM_CUDA);
  // The next task starts on host memory again.
  w.engine.reset_context(&w.p, &w.team, 0, 2);
  ASSERT_EQ(w.send(), HVD_OK);
  EXPECT_EQ(GpuWorld::fake(w.host)->sent.size(), 1u);
  EXPECT_EQ(GpuWorld::fake(w.gpu)->sent.size(), 1u);
}

TEST(GpuScopeEngine, NativeCollectivesOfTheGpuTransportForDeviceMemory) {
  GpuWorld w(false);  // collectives only, as nccl
  hvd_coll_comm* comm = nullptr;
  // Host memory: the intra transport serves the team and has none.
  EXPECT_EQ(Engine::api()->native(&w.p, &comm), nullptr);
  Engine::set_memory(&w.p, {HVD_MEM_CUDA, 0});
  EXPECT_EQ(Engine::api()->native(&w.p, &comm), fake_collectives());
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(fake_comm(comm)->members, (std::vector<int32_t>{0, 1}));
  // No point-to-point connection over it: refused, saying why.
  EXPECT_EQ(w.send(), HVD_ERR_UNSUPPORTED);
  EXPECT_NE(w.engine.last_error().find(
                "[transport] gpu 'fakegpu' has no point-to-point connections"),
            std::string::npos)
      << w.engine.last_error();
}

TEST(GpuScopeEngine, TheGpuTransportDoesNotRegisterHostBuffers) {
  GpuWorld w(true, true);
  EXPECT_FALSE(w.engine.needs_registration());
  std::vector<uint8_t> buffer(64);
  w.engine.register_permanent(buffer.data(), buffer.size());
  EXPECT_EQ(GpuWorld::fake(w.gpu)->registrations, 0);
  w.engine.forget_registration(buffer.data(), buffer.size());
}

TEST(GpuScopeEngine, TheRouteNamesTheGpuScopeOrWhyThereIsNone) {
  using runtime::choose_memory_route;
  using runtime::gpu_transport_of;
  using runtime::transports_serving;
  GpuWorld w(false);
  runtime::RouteDecision d =
      choose_memory_route(HVD_MEM_CUDA, transports_serving(w.engine, w.team),
                          gpu_transport_of(w.engine, {"fakegpu"}), {"native"});
  EXPECT_EQ(d.route, runtime::MemoryRoute::kDirect);
  EXPECT_EQ(d.reason,
            "CUDA tensors go direct over [transport] gpu 'fakegpu' (reducer "
            "'native')");

  Engine plain(0, 2, 0);
  plain.set_gpu_unavailable("every rank: no CUDA device");
  runtime::GpuTransport gpu = gpu_transport_of(plain, {"nccl"});
  EXPECT_EQ(gpu.loaded, "");
  d = choose_memory_route(HVD_MEM_CUDA, {{"shm", HVD_MEM_BIT(HVD_MEM_HOST)}},
                          gpu, {"native"});
  EXPECT_EQ(d.route, runtime::MemoryRoute::kStage);
  EXPECT_EQ(d.reason,
            "CUDA tensors staged through host memory: transport 'shm' cannot "
            "move CUDA memory; [transport] gpu 'nccl' not loaded: every rank: "
            "no CUDA device");
}

}  // namespace
}  // namespace hvd::p2p
