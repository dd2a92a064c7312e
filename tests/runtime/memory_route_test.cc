// The memory-kind decision (memory_route.h) and the refusal of CUDA tensors
// where no CUDA device exists (tensor_view.h), without a GPU.
#include "runtime/memory_route.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "device/device.h"
#include "fake_transport.h"
#include "p2p/transport.h"
#include "runtime/tensor_view.h"
#include "tensor_of.h"

namespace hvd::runtime {
namespace {

const uint32_t kHostOnly = HVD_MEM_BIT(HVD_MEM_HOST);
const uint32_t kHostAndCuda = kHostOnly | HVD_MEM_BIT(HVD_MEM_CUDA);

const std::vector<std::string> kNative = {"native"};

GpuTransport nccl_loaded() {
  GpuTransport gpu;
  gpu.configured = {"nccl"};
  gpu.loaded = "nccl";
  gpu.loaded_mem_kinds = HVD_MEM_BIT(HVD_MEM_CUDA);
  return gpu;
}

GpuTransport nccl_not_loaded() {
  GpuTransport gpu;
  gpu.configured = {"nccl"};
  gpu.not_loaded_reason = "no CUDA device";
  return gpu;
}

TEST(MemoryRoute, HostTensorsAreNeverStaged) {
  RouteDecision d = choose_memory_route(HVD_MEM_HOST, {{"shm", kHostOnly}},
                                        nccl_not_loaded(), kNative);
  EXPECT_EQ(d.route, MemoryRoute::kHost);
  EXPECT_EQ(d.reason, "");
}

TEST(MemoryRoute, CudaOverAHostOnlyTransportIsStaged) {
  RouteDecision d = choose_memory_route(HVD_MEM_CUDA, {{"shm", kHostOnly}},
                                        nccl_not_loaded(), kNative);
  EXPECT_EQ(d.route, MemoryRoute::kStage);
  EXPECT_EQ(d.reason,
            "CUDA tensors staged through host memory: transport 'shm' cannot "
            "move CUDA memory; [transport] gpu 'nccl' not loaded: no CUDA "
            "device");
}

TEST(MemoryRoute, StagedWhenOnlySomeTransportsMoveCuda) {
  RouteDecision d = choose_memory_route(
      HVD_MEM_CUDA,
      {{"ofi", kHostAndCuda}, {"shm", kHostOnly}, {"tcp", kHostOnly}},
      GpuTransport{}, kNative);
  EXPECT_EQ(d.route, MemoryRoute::kStage);
  EXPECT_EQ(d.reason,
            "CUDA tensors staged through host memory: transports 'shm', 'tcp' "
            "cannot move CUDA memory; [transport] gpu names no transport");
}

TEST(MemoryRoute, OneRankWithoutTransportsIsStaged) {
  RouteDecision d =
      choose_memory_route(HVD_MEM_CUDA, {}, nccl_not_loaded(), kNative);
  EXPECT_EQ(d.route, MemoryRoute::kStage);
  EXPECT_NE(d.reason.find("no transport in this process set"),
            std::string::npos)
      << d.reason;
}

TEST(MemoryRoute, CudaGoesDirectlyOverTransportsThatDeclareIt) {
  RouteDecision d = choose_memory_route(HVD_MEM_CUDA, {{"ofi", kHostAndCuda}},
                                        nccl_not_loaded(), kNative);
  EXPECT_EQ(d.route, MemoryRoute::kDirect);
  EXPECT_EQ(d.reason,
            "CUDA tensors go direct over transport 'ofi' (reducer 'native')");
}

TEST(MemoryRoute, CudaGoesDirectlyOverTheLoadedGpuTransport) {
  RouteDecision d = choose_memory_route(HVD_MEM_CUDA, {{"shm", kHostOnly}},
                                        nccl_loaded(), kNative);
  EXPECT_EQ(d.route, MemoryRoute::kDirect);
  EXPECT_EQ(d.reason,
            "CUDA tensors go direct over [transport] gpu 'nccl' (reducer "
            "'native')");
}

// The default reducer list may lack one that runs CUDA memory: then the
// tensors are staged rather than left with no reducer at all.
TEST(MemoryRoute, StagedWhenNoLoadedReducerRunsTheKind) {
  RouteDecision d = choose_memory_route(HVD_MEM_CUDA, {{"shm", kHostOnly}},
                                        nccl_loaded(), {});
  EXPECT_EQ(d.route, MemoryRoute::kStage);
  EXPECT_EQ(d.reason,
            "CUDA tensors staged through host memory: [transport] gpu 'nccl' "
            "moves CUDA memory, but no loaded reducer runs CUDA memory on "
            "this process set (the native reducer runs a transport's own "
            "collectives)");
  d = choose_memory_route(HVD_MEM_CUDA,
                          {{"ofi", kHostAndCuda}, {"ucx", kHostAndCuda}},
                          nccl_not_loaded(), {});
  EXPECT_EQ(d.route, MemoryRoute::kStage);
  EXPECT_NE(d.reason.find("transports 'ofi', 'ucx' move CUDA memory, but"),
            std::string::npos)
      << d.reason;
}

TEST(MemoryRoute, ALoadedGpuTransportWithoutTheKindStillStages) {
  GpuTransport gpu;
  gpu.configured = {"nccl"};
  gpu.loaded = "nccl";
  gpu.loaded_mem_kinds = kHostOnly;
  RouteDecision d =
      choose_memory_route(HVD_MEM_CUDA, {{"tcp", kHostOnly}}, gpu, kNative);
  EXPECT_EQ(d.route, MemoryRoute::kStage);
  EXPECT_NE(d.reason.find("[transport] gpu 'nccl' cannot move CUDA memory"),
            std::string::npos)
      << d.reason;
}

TEST(MemoryRoute, ScaledReductionsAreStagedForTheHostToScale) {
  EXPECT_FALSE(scales_values(HVD_COLL_ALLREDUCE, HVD_OP_SUM, 1.0, 1.0));
  EXPECT_TRUE(scales_values(HVD_COLL_ALLREDUCE, HVD_OP_AVERAGE, 1.0, 1.0));
  EXPECT_TRUE(scales_values(HVD_COLL_REDUCESCATTER, HVD_OP_SUM, 0.5, 1.0));
  EXPECT_TRUE(scales_values(HVD_COLL_ALLREDUCE, HVD_OP_MAX, 1.0, 2.0));
  EXPECT_FALSE(scales_values(HVD_COLL_BROADCAST, HVD_OP_SUM, 1.0, 1.0));
}

TEST(MemoryRoute, MixedDevicesInOneResponseAreRefused) {
  EXPECT_EQ(uniform_device({{HVD_MEM_CUDA, 1}, {HVD_MEM_CUDA, 1}}, "x").id, 1);
  try {
    uniform_device({{HVD_MEM_CUDA, 0}, {HVD_MEM_HOST, 0}}, "allreduce 'grads'");
    FAIL() << "mixed kinds accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(),
                 "allreduce 'grads': tensors on CUDA device 0 and host device "
                 "0 in one response; send them as separate ops");
  }
  EXPECT_THROW(uniform_device({{HVD_MEM_CUDA, 0}, {HVD_MEM_CUDA, 1}}, "x"),
               Error);
}

// A transport of `scope` declaring `mem_kinds`; "" when it was taken, else
// why it was refused.
std::string load_fake(const char* scope, uint32_t mem_kinds) {
  FakeOptions options;
  options.mem_kinds = mem_kinds;
  try {
    p2p::Transport t(scope, "transport 'fake'", fake_transport_api(),
                     fake_transport(options), nullptr);
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_UNSUPPORTED);
    return e.what();
  }
}

TEST(MemoryRoute, TransportsAreCheckedForTheMemoryOfTheirScope) {
  const uint32_t cuda_only = HVD_MEM_BIT(HVD_MEM_CUDA);
  EXPECT_EQ(load_fake("intra", kHostOnly), "");
  EXPECT_EQ(load_fake("intra", cuda_only),
            "transport 'fake': cannot send from host memory");
  EXPECT_EQ(load_fake("gpu", cuda_only), "");
  EXPECT_EQ(load_fake("gpu", kHostOnly),
            "transport 'fake': cannot send from CUDA memory");
}

TEST(MemoryRoute, CudaTensorWithoutADeviceIsRefusedByName) {
  if (device_unusable({HVD_MEM_CUDA, 0}).empty()) {
    GTEST_SKIP() << "a CUDA device is present";
  }
  float data[4] = {};
  int64_t shape[1] = {4};
  try {
    view_tensor(
        hvd_test::tensor_of(data, HVD_FLOAT32, shape, 1, {HVD_MEM_CUDA, 0}),
        "allreduce 'weights' input 0");
    FAIL() << "a CUDA tensor was accepted without a CUDA device";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_UNSUPPORTED);
    const std::string text = e.what();
    EXPECT_EQ(text.rfind("allreduce 'weights' input 0: CUDA device 0 is not "
                         "usable: ",
                         0),
              0u)
        << text;
  }
}

TEST(MemoryRoute, CudaTensorOnAPresentDeviceIsAccepted) {
  if (!device_unusable({HVD_MEM_CUDA, 0}).empty()) {
    GTEST_SKIP() << device_unusable({HVD_MEM_CUDA, 0});
  }
  float data[4] = {};  // not dereferenced by the view
  int64_t shape[1] = {4};
  TensorView v = view_tensor(
      hvd_test::tensor_of(data, HVD_FLOAT32, shape, 1, {HVD_MEM_CUDA, 0}), "t");
  EXPECT_EQ(v.device.kind, HVD_MEM_CUDA);
  EXPECT_EQ(v.bytes, 16u);
}

}  // namespace
}  // namespace hvd::runtime
