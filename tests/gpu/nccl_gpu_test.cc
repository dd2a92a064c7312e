// The nccl transport on a real GPU: every collective of its extension on
// device memory, on its own stream and on a stream of the core's device
// layer (ordered after a copy on that stream), and abort. Every test skips,
// saying why, where no CUDA device exists. Runs as one rank under ctest;
// under horovodrun -np N each rank takes the device of its local rank.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "bootstrap_world.h"
#include "config/config.h"
#include "gpu_world.h"

namespace hvd_gpu_test {
namespace {

class NcclGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_devices(&why) == 0) {
      GTEST_SKIP() << "no CUDA device here (" << why
                   << "); the GPU tests need one";
    }
    config_ = std::make_unique<hvd::Config>(hvd::Config::load());
    world_ =
        std::make_unique<hvd_conformance::BootstrapWorld>(*config_, "nccl");
    ASSERT_EQ(api_.init(world_->host(), &t_), HVD_OK)
        << api_.last_error(nullptr);
    size_ = world_->size();
    rank_ = world_->rank();
    ranks_.resize(size_);
    std::iota(ranks_.begin(), ranks_.end(), 0);
    hosts_.assign(size_, 0);
    team_.struct_size = sizeof(team_);
    team_.rank = rank_;
    team_.size = size_;
    team_.world_ranks = ranks_.data();
    team_.host_of = hosts_.data();
    team_.host_count = 1;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    hvd_status s;
    while ((s = coll_.comm_create(t_, &team_, &comm_)) == HVD_AGAIN) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "comm_create";
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ASSERT_EQ(s, HVD_OK) << api_.last_error(t_);
    ASSERT_EQ(cudaSetDevice(world_->host()->world->local_rank %
                            cuda_devices(nullptr)),
              cudaSuccess);
  }
  void TearDown() override {
    if (comm_ != nullptr) coll_.comm_destroy(comm_);
    if (t_ != nullptr) api_.finalize(t_);
  }

  template <typename T>
  T* device_copy(const std::vector<T>& host) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, host.size() * sizeof(T) + 1), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * sizeof(T),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    buffers_.push_back(p);
    return static_cast<T*>(p);
  }
  template <typename T>
  std::vector<T> host_copy(const T* device, size_t n) {
    std::vector<T> out(n);
    EXPECT_EQ(
        cudaMemcpy(out.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost),
        cudaSuccess);
    return out;
  }
  hvd_completion finish(hvd_request* r) { return wait(api_, t_, r); }

  ~NcclGpu() override {
    for (void* p : buffers_) cudaFree(p);
  }

  const hvd_transport_api& api_ = nccl_api();
  const hvd_transport_collectives& coll_ = nccl_collectives();
  std::unique_ptr<hvd::Config> config_;
  std::unique_ptr<hvd_conformance::BootstrapWorld> world_;
  hvd_transport* t_ = nullptr;
  hvd_coll_comm* comm_ = nullptr;
  hvd_team team_{};
  std::vector<int32_t> ranks_, hosts_;
  std::vector<void*> buffers_;
  int size_ = 1, rank_ = 0;
};

TEST_F(NcclGpu, AllreduceOnItsOwnStream) {
  const size_t n = (1u << 20) + 3;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(i % 13) * float(rank_ + 1);
  float* d = device_copy(x);
  hvd_request* r = nullptr;
  ASSERT_EQ(
      coll_.allreduce(comm_, d, d, n, HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
      HVD_OK);
  hvd_completion c = finish(r);
  ASSERT_EQ(c.status, HVD_OK);
  EXPECT_EQ(c.bytes, n * sizeof(float));
  std::vector<float> y = host_copy(d, n);
  const float ranks_sum = float(size_ * (size_ + 1) / 2);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], float(i % 13) * ranks_sum);
}

// The input reaches the device by a copy queued on a stream of the core's
// device layer; the allreduce given that stream must run after it.
TEST_F(NcclGpu, AllreduceOrderedOnTheCoresStream) {
  const hvd_device_api* dev = world_->host()->device;
  ASSERT_TRUE(HVD_HAS_FIELD(dev, hvd_device_api, stream_native));
  hvd_device gpu{HVD_MEM_CUDA,
                 world_->host()->world->local_rank % cuda_devices(nullptr)};
  hvd_stream stream = nullptr;
  ASSERT_EQ(dev->stream_create(dev->ctx, gpu, &stream), HVD_OK);
  const size_t n = 64u << 20 >> 2;
  std::vector<float> x(n, 1.5f), y(n, 0.0f);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, n * sizeof(float)), cudaSuccess);
  buffers_.push_back(d);
  ASSERT_EQ(cudaMemset(d, 0, n * sizeof(float)), cudaSuccess);
  hvd_device host{HVD_MEM_HOST, 0};
  ASSERT_EQ(dev->memcpy_async(dev->ctx, d, gpu, x.data(), host,
                              n * sizeof(float), stream),
            HVD_OK);
  hvd_request* r = nullptr;
  ASSERT_EQ(
      coll_.allreduce(comm_, d, d, n, HVD_FLOAT32, HVD_OP_SUM, stream, &r),
      HVD_OK);
  ASSERT_EQ(dev->memcpy_async(dev->ctx, y.data(), host, d, gpu,
                              n * sizeof(float), stream),
            HVD_OK);
  ASSERT_EQ(finish(r).status, HVD_OK);
  ASSERT_EQ(dev->stream_synchronize(dev->ctx, stream), HVD_OK);
  for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(y[i], 1.5f * float(size_));
  dev->stream_destroy(dev->ctx, stream);
}

TEST_F(NcclGpu, GathersBroadcastsAndScatters) {
  // allgatherv with rank r giving r + 1 elements (uneven: grouped
  // broadcasts), then a broadcast from the last rank.
  std::vector<size_t> counts(size_), displs(size_);
  size_t total = 0;
  for (int p = 0; p < size_; ++p) {
    counts[p] = size_t(p + 1);
    displs[p] = total;
    total += counts[p];
  }
  int32_t* mine = device_copy(std::vector<int32_t>(rank_ + 1, 100 + rank_));
  int32_t* all = device_copy(std::vector<int32_t>(total, -1));
  hvd_request* r = nullptr;
  ASSERT_EQ(coll_.allgatherv(comm_, mine, rank_ + 1, all, counts.data(),
                             displs.data(), HVD_INT32, nullptr, &r),
            HVD_OK);
  ASSERT_EQ(finish(r).status, HVD_OK);
  std::vector<int32_t> got = host_copy(all, total);
  for (int p = 0; p < size_; ++p) {
    for (size_t i = 0; i < counts[p]; ++i)
      EXPECT_EQ(got[displs[p] + i], 100 + p);
  }
  double* b =
      device_copy(std::vector<double>(1000, rank_ == size_ - 1 ? 2.5 : 0));
  ASSERT_EQ(
      coll_.broadcast(comm_, b, 1000, HVD_FLOAT64, size_ - 1, nullptr, &r),
      HVD_OK);
  ASSERT_EQ(finish(r).status, HVD_OK);
  for (double v : host_copy(b, 1000)) ASSERT_EQ(v, 2.5);

  // reducescatter: every rank gives ones; rank p keeps p + 2 sums.
  std::vector<size_t> rc(size_);
  size_t sum = 0;
  for (int p = 0; p < size_; ++p) sum += (rc[p] = size_t(p + 2));
  float* send = device_copy(std::vector<float>(sum, 1.0f));
  float* recv = device_copy(std::vector<float>(rc[rank_], 0.0f));
  ASSERT_EQ(coll_.reducescatter(comm_, send, recv, rc.data(), HVD_FLOAT32,
                                HVD_OP_SUM, nullptr, &r),
            HVD_OK);
  ASSERT_EQ(finish(r).status, HVD_OK);
  for (float v : host_copy(recv, rc[rank_])) ASSERT_EQ(v, float(size_));

  // alltoallv: rank r sends p + 1 bytes of value r to rank p.
  std::vector<size_t> sc(size_), sd(size_), ac(size_), ad(size_);
  size_t st = 0, at = 0;
  for (int p = 0; p < size_; ++p) {
    sc[p] = size_t(p + 1);
    sd[p] = st;
    st += sc[p];
    ac[p] = size_t(rank_ + 1);
    ad[p] = at;
    at += ac[p];
  }
  uint8_t* out = device_copy(std::vector<uint8_t>(st, uint8_t(rank_)));
  uint8_t* in = device_copy(std::vector<uint8_t>(at, 0xff));
  ASSERT_EQ(coll_.alltoallv(comm_, out, sc.data(), sd.data(), in, ac.data(),
                            ad.data(), HVD_UINT8, nullptr, &r),
            HVD_OK);
  ASSERT_EQ(finish(r).status, HVD_OK);
  std::vector<uint8_t> arrived = host_copy(in, at);
  for (int p = 0; p < size_; ++p) {
    for (size_t i = 0; i < ac[p]; ++i) EXPECT_EQ(arrived[ad[p] + i], p);
  }
  ASSERT_EQ(coll_.barrier(comm_, &r), HVD_OK);
  ASSERT_EQ(finish(r).status, HVD_OK);
}

TEST_F(NcclGpu, AbortFailsWhatComesAfter) {
  ASSERT_EQ(coll_.comm_abort(comm_, HVD_ERR_ABORTED, 0), HVD_OK);
  ASSERT_EQ(coll_.comm_abort(comm_, HVD_ERR_TIMEOUT, 3), HVD_OK);
  float* d = device_copy(std::vector<float>(16, 1.0f));
  hvd_request* r = nullptr;
  ASSERT_EQ(
      coll_.allreduce(comm_, d, d, 16, HVD_FLOAT32, HVD_OP_SUM, nullptr, &r),
      HVD_OK);
  hvd_completion c = finish(r);
  EXPECT_EQ(c.status, HVD_ERR_ABORTED);
  EXPECT_EQ(c.peer, 0);
}

}  // namespace
}  // namespace hvd_gpu_test
