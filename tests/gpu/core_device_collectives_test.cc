// Broadcast, allgather and alltoall of CUDA tensors through the core's
// public API on one rank, ordered as a framework orders them: the inputs
// are copied late on a producer stream (behind a host function that
// sleeps) and made ready by an event; the ops run on the framework's
// stream; allgather and alltoall outputs come from an adapter in device
// memory, as horovod.torch allocates them. Inputs and outputs start as
// poison, so a collective that read before the ready event, or a done
// callback that came before the device wrote the outputs, shows as a wrong
// value. The same checks as runtime.device_collectives on the fake device,
// on the CUDA side of the device layer.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <string>
#include <vector>

#include "horovod/adapter.h"
#include "horovod/horovod.h"
#include "tensor_of.h"

namespace {

constexpr hvd_device kGpu{HVD_MEM_CUDA, 0};
constexpr float kPoison = 77;

const hvd_device_api& dev() { return *hvd_device_layer(); }

std::vector<float> read(const void* device_data, size_t n) {
  std::vector<float> v(n);
  if (n > 0 && cudaMemcpy(v.data(), device_data, n * sizeof(float),
                          cudaMemcpyDeviceToHost) != cudaSuccess) {
    v.assign(n, -1);
  }
  return v;
}

void* poisoned(size_t n) {
  void* p = nullptr;
  if (cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(float)) != cudaSuccess) {
    return nullptr;
  }
  const std::vector<float> poison(n, kPoison);
  cudaMemcpy(p, poison.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  return p;
}

// One op: an input of `want` values written late, its output (the caller's
// or the adapter's), and what the done callback saw.
struct Op {
  std::string name;
  std::vector<float> want;
  std::vector<int64_t> shape;
  void* staged = nullptr;  // the values, copied into `input` late
  void* input = nullptr;
  void* output = nullptr;
  hvd_event ready = nullptr;
  std::atomic<int> done_calls{0};
  std::atomic<bool> early{false};

  ~Op() {
    cudaFree(staged);
    cudaFree(input);
    cudaFree(output);
    if (ready) dev().event_destroy(dev().ctx, ready);
  }
  hvd_tensor in_desc() {
    return hvd_test::tensor_of(input, HVD_FLOAT32, shape.data(), 1, kGpu);
  }
  hvd_tensor out_desc() {
    return hvd_test::tensor_of(output, HVD_FLOAT32, shape.data(), 1, kGpu);
  }
  static void on_done(void* user, hvd_status status, const char*) {
    Op* op = static_cast<Op*>(user);
    if (status == HVD_OK && read(op->output, op->want.size()) != op->want) {
      op->early = true;
    }
    ++op->done_calls;
  }
};

hvd_status allocate(void*, void* op_ctx, int32_t, const hvd_tensor*,
                    int32_t ndim, const int64_t* shape, hvd_tensor* out) {
  Op* op = static_cast<Op*>(op_ctx);
  size_t n = 1;
  for (int32_t d = 0; d < ndim; ++d) n *= size_t(shape[d]);
  op->output = poisoned(n);
  if (op->output == nullptr) return HVD_ERR_OUT_OF_MEMORY;
  *out = op->out_desc();
  return HVD_OK;
}

void ignore_done(void*, void*, hvd_status, const char*) {}

class CoreDeviceCollectives : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      GTEST_SKIP() << "no CUDA device";
    }
    ASSERT_EQ(hvd_init(nullptr), HVD_OK) << hvd_last_error();
    api_.struct_size = sizeof api_;
    api_.kind = HVD_PLUGIN_ADAPTER;
    api_.abi_major = HVD_ABI_VERSION_MAJOR;
    api_.abi_minor = HVD_ABI_VERSION_MINOR;
    api_.name = "cuda-test";
    api_.version = "1";
    api_.allocate_output = allocate;
    api_.done = ignore_done;
    ASSERT_EQ(hvd_register_adapter(&api_, nullptr, &adapter_), HVD_OK)
        << hvd_last_error();
    ASSERT_EQ(dev().stream_create(dev().ctx, kGpu, &stream_), HVD_OK);
    ASSERT_EQ(dev().stream_create(dev().ctx, kGpu, &producer_), HVD_OK);
  }
  void TearDown() override {
    if (producer_) dev().stream_synchronize(dev().ctx, producer_);
    if (stream_) dev().stream_synchronize(dev().ctx, stream_);
    ops_.clear();
    if (producer_) dev().stream_destroy(dev().ctx, producer_);
    if (stream_) dev().stream_destroy(dev().ctx, stream_);
    if (adapter_) hvd_unregister_adapter(adapter_);
    if (hvd_is_initialized()) hvd_shutdown();
  }

  // An op whose input of `values` lands on the producer stream only after
  // a host function there has slept; `caller_output`: an output of the
  // input's shape the caller provides.
  Op& make(const std::string& name, const std::vector<float>& values,
           bool caller_output) {
    Op& op = ops_.emplace_back();
    op.name = name;
    op.want = values;
    op.shape = {int64_t(values.size())};
    op.input = poisoned(values.size());
    if (caller_output) op.output = poisoned(values.size());
    op.staged = poisoned(values.size());
    cudaMemcpy(op.staged, values.data(), values.size() * sizeof(float),
               cudaMemcpyHostToDevice);
    auto* producer =
        static_cast<cudaStream_t>(dev().stream_native(dev().ctx, producer_));
    cudaLaunchHostFunc(
        producer, [](void*) { usleep(20 * 1000); }, nullptr);
    cudaMemcpyAsync(op.input, op.staged, values.size() * sizeof(float),
                    cudaMemcpyDeviceToDevice, producer);
    EXPECT_EQ(dev().event_create(dev().ctx, kGpu, &op.ready), HVD_OK);
    EXPECT_EQ(dev().event_record(dev().ctx, op.ready, producer_), HVD_OK);
    return op;
  }

  hvd_handle* enqueue(Op& op, hvd_collective c) {
    hvd_tensor in = op.in_desc();
    hvd_tensor out = op.out_desc();
    hvd_op desc{};
    desc.struct_size = sizeof desc;
    desc.collective = c;
    desc.name = op.name.c_str();
    desc.tensor_count = 1;
    desc.inputs = &in;
    desc.outputs = c == HVD_COLL_BROADCAST ? &out : nullptr;
    desc.stream = stream_;
    desc.ready_event = op.ready;
    desc.done = Op::on_done;
    desc.user = &op;
    if (c != HVD_COLL_BROADCAST) {
      desc.adapter = adapter_;
      desc.adapter_op = &op;
    }
    hvd_handle* h = nullptr;
    EXPECT_EQ(hvd_enqueue(&desc, &h), HVD_OK) << hvd_last_error();
    return h;
  }

  void check(Op& op, hvd_handle* h) {
    if (h == nullptr) return;
    EXPECT_EQ(hvd_wait(h, 30000), HVD_OK)
        << op.name << ": " << hvd_handle_message(h);
    hvd_release(h);
    EXPECT_EQ(op.done_calls, 1) << op.name;
    EXPECT_FALSE(op.early) << op.name
                           << ": the done callback saw outputs before the "
                              "device finished writing them";
    EXPECT_EQ(read(op.output, op.want.size()), op.want) << op.name;
  }

  hvd_adapter_api api_{};
  hvd_adapter* adapter_ = nullptr;
  hvd_stream stream_ = nullptr, producer_ = nullptr;
  std::deque<Op> ops_;
};

std::vector<float> values(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + float(i % 101);
  return v;
}

TEST_F(CoreDeviceCollectives, EveryCollectiveWaitsForTheReadyEvent) {
  struct Case {
    hvd_collective c;
    const char* name;
    size_t n;
  };
  const Case cases[] = {{HVD_COLL_BROADCAST, "cuda.broadcast.0", 1000},
                        {HVD_COLL_BROADCAST, "cuda.broadcast.1", 3},
                        {HVD_COLL_ALLGATHER, "cuda.allgather", 4099},
                        {HVD_COLL_ALLTOALL, "cuda.alltoall", 517}};
  std::vector<std::pair<Op*, hvd_handle*>> running;
  float base = 0;
  for (const Case& k : cases) {
    Op& op = make(k.name, values(k.n, base += 1000), k.c == HVD_COLL_BROADCAST);
    running.emplace_back(&op, enqueue(op, k.c));
  }
  for (auto& [op, h] : running) check(*op, h);
}

}  // namespace
