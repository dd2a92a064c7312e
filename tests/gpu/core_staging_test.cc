// CUDA tensors through the core's public API on one rank: hvd_enqueue takes
// device memory, stages it through the host fusion buffer (no transport here
// moves CUDA memory) and writes the results back to the device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "horovod/horovod.h"
#include "tensor_of.h"

namespace {

class CoreStaging : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      GTEST_SKIP() << "no CUDA device";
    }
    ASSERT_EQ(hvd_accepts_memory(HVD_MEM_CUDA, 0), 1);
    ASSERT_EQ(hvd_init(nullptr), HVD_OK) << hvd_last_error();
  }
  void TearDown() override {
    for (void* p : buffers_) cudaFree(p);
    if (hvd_is_initialized()) hvd_shutdown();
  }
  float* device_floats(const std::vector<float>& values) {
    void* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, values.size() * sizeof(float)), cudaSuccess);
    buffers_.push_back(d);
    EXPECT_EQ(cudaMemcpy(d, values.data(), values.size() * sizeof(float),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    return static_cast<float*>(d);
  }
  std::vector<void*> buffers_;
};

hvd_tensor cuda_tensor(float* data, int64_t* shape) {
  return hvd_test::tensor_of(data, HVD_FLOAT32, shape, 1, {HVD_MEM_CUDA, 0});
}

hvd_status run(hvd_collective collective, const char* name, hvd_tensor* in,
               int32_t count, hvd_tensor* out, hvd_handle** handle) {
  hvd_op op{};
  op.struct_size = sizeof op;
  op.collective = collective;
  op.name = name;
  op.tensor_count = count;
  op.inputs = in;
  op.outputs = out;
  op.op = HVD_OP_SUM;
  op.prescale = 1.0;
  op.postscale = 3.0;
  hvd_status s = hvd_enqueue(&op, handle);
  if (s != HVD_OK) return s;
  return hvd_wait(*handle, 30000);
}

TEST_F(CoreStaging, GroupedAllreduceOfCudaTensors) {
  const size_t n = (3u << 20) + 5;  // more than one staging chunk
  std::vector<float> a(n), b(n, 2.0f);
  for (size_t i = 0; i < n; ++i) a[i] = float(i % 7);
  int64_t shape_a[] = {int64_t(n)}, shape_b[] = {int64_t(n)};
  hvd_tensor in[2] = {cuda_tensor(device_floats(a), shape_a),
                      cuda_tensor(device_floats(b), shape_b)};
  hvd_handle* h = nullptr;
  ASSERT_EQ(run(HVD_COLL_ALLREDUCE, "staged", in, 2, nullptr, &h), HVD_OK)
      << (h ? hvd_handle_message(h) : hvd_last_error());
  hvd_release(h);
  std::vector<float> got(n);
  ASSERT_EQ(cudaMemcpy(got.data(), in[0].data, n * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 3.0f * a[i]) << i;
  ASSERT_EQ(cudaMemcpy(got.data(), in[1].data, n * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 6.0f) << i;
}

TEST_F(CoreStaging, AllgatherOfACudaTensorReturnsHostMemory) {
  std::vector<float> a = {1, 2, 3, 4};
  int64_t shape[] = {4};
  hvd_tensor in = cuda_tensor(device_floats(a), shape);
  hvd_handle* h = nullptr;
  ASSERT_EQ(run(HVD_COLL_ALLGATHER, "gathered", &in, 1, nullptr, &h), HVD_OK)
      << (h ? hvd_handle_message(h) : hvd_last_error());
  hvd_tensor out{};
  out.struct_size = sizeof out;
  ASSERT_EQ(hvd_handle_output(h, 0, &out), HVD_OK) << hvd_last_error();
  EXPECT_EQ(out.device.kind, HVD_MEM_HOST);
  const float* values = static_cast<const float*>(out.data);
  EXPECT_EQ(std::vector<float>(values, values + 4), a);
  hvd_release(h);
}

}  // namespace
