// The hvd_device_api table: host memory with NULL (synchronous) streams,
// the fake device's ordering of copies, reductions, events and waits
// across streams, and CUDA absent without anything failing to load.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "device/device.h"
#include "device/host_stream.h"

namespace hvd::test {
namespace {

const hvd_device kHost{HVD_MEM_HOST, 0};

// Holds a stream's worker until opened.
struct Gate {
  std::mutex mutex;
  std::condition_variable opened_cv;
  bool opened = false;
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      opened = true;
    }
    opened_cv.notify_all();
  }
  static void wait(void* self) {
    Gate* g = static_cast<Gate*>(self);
    std::unique_lock<std::mutex> lock(g->mutex);
    g->opened_cv.wait(lock, [g] { return g->opened; });
  }
};

class DeviceApiTest : public ::testing::Test {
 protected:
  const hvd_device_api& api = *device_api();
  hvd_stream make_stream() {
    hvd_stream s = nullptr;
    EXPECT_EQ(api.stream_create(api.ctx, kHost, &s), HVD_OK);
    streams_.push_back(s);
    return s;
  }
  hvd_event make_event() {
    hvd_event e = nullptr;
    EXPECT_EQ(api.event_create(api.ctx, kHost, &e), HVD_OK);
    events_.push_back(e);
    return e;
  }
  void TearDown() override {
    for (hvd_event e : events_)
      EXPECT_EQ(api.event_destroy(api.ctx, e), HVD_OK);
    for (hvd_stream s : streams_) {
      EXPECT_EQ(api.stream_destroy(api.ctx, s), HVD_OK);
    }
  }

 private:
  std::vector<hvd_stream> streams_;
  std::vector<hvd_event> events_;
};

// Only a CUDA stream has a handle of the device's own (tests/gpu checks
// that one orders NCCL's work).
TEST_F(DeviceApiTest, HostStreamsHaveNoNativeHandle) {
  ASSERT_TRUE(HVD_HAS_FIELD(&api, hvd_device_api, stream_native));
  EXPECT_EQ(api.stream_native(api.ctx, nullptr), nullptr);
  EXPECT_EQ(api.stream_native(api.ctx, make_stream()), nullptr);
}

TEST_F(DeviceApiTest, TableIsComplete) {
  EXPECT_EQ(api.struct_size, sizeof(hvd_device_api));
  for (auto fn :
       {(void*)api.device_count, (void*)api.stream_create,
        (void*)api.stream_destroy, (void*)api.stream_synchronize,
        (void*)api.stream_wait_event, (void*)api.event_create,
        (void*)api.event_destroy, (void*)api.event_record,
        (void*)api.event_query, (void*)api.mem_alloc, (void*)api.mem_free,
        (void*)api.memcpy_async, (void*)api.reduce, (void*)api.scale,
        (void*)api.stream_native}) {
    EXPECT_NE(fn, nullptr);
  }
  EXPECT_EQ(api.device_count(api.ctx, HVD_MEM_HOST), 1);
  EXPECT_EQ(api.device_count(api.ctx, HVD_MEM_DMABUF), 0);
}

TEST_F(DeviceApiTest, NullStreamIsSynchronous) {
  void* p = nullptr;
  ASSERT_EQ(api.mem_alloc(api.ctx, kHost, 4 * sizeof(float), &p), HVD_OK);
  EXPECT_EQ((uintptr_t)p % 64, 0u);
  float* a = static_cast<float*>(p);
  const float src[4] = {1, 2, 3, 4};
  ASSERT_EQ(
      api.memcpy_async(api.ctx, a, kHost, src, kHost, sizeof src, nullptr),
      HVD_OK);
  ASSERT_EQ(api.reduce(api.ctx, kHost, HVD_FLOAT32, HVD_OP_SUM, a, a, src, 4,
                       nullptr),
            HVD_OK);
  ASSERT_EQ(api.scale(api.ctx, kHost, HVD_FLOAT32, a, 4, 0.5, nullptr), HVD_OK);
  EXPECT_EQ(std::vector<float>(a, a + 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(api.stream_synchronize(api.ctx, nullptr), HVD_OK);
  EXPECT_EQ(api.mem_free(api.ctx, kHost, p), HVD_OK);
}

TEST_F(DeviceApiTest, StreamRunsItsWorkInOrder) {
  hvd_stream s = make_stream();
  hvd_event done = make_event();
  Gate gate;
  std::vector<int32_t> a = {1, 2, 3}, b(3, 0), c(3, 0);
  ASSERT_EQ(launch_host_func(s, Gate::wait, &gate), HVD_OK);
  ASSERT_EQ(api.memcpy_async(api.ctx, b.data(), kHost, a.data(), kHost, 12, s),
            HVD_OK);
  ASSERT_EQ(api.reduce(api.ctx, kHost, HVD_INT32, HVD_OP_PRODUCT, c.data(),
                       a.data(), b.data(), 3, s),
            HVD_OK);
  ASSERT_EQ(api.scale(api.ctx, kHost, HVD_INT32, c.data(), 3, 2.0, s), HVD_OK);
  ASSERT_EQ(api.event_record(api.ctx, done, s), HVD_OK);
  // The worker is held at the gate: nothing has run.
  EXPECT_EQ(api.event_query(api.ctx, done), HVD_AGAIN);
  EXPECT_EQ(b, (std::vector<int32_t>{0, 0, 0}));
  gate.open();
  ASSERT_EQ(api.stream_synchronize(api.ctx, s), HVD_OK);
  EXPECT_EQ(api.event_query(api.ctx, done), HVD_OK);
  EXPECT_EQ(c, (std::vector<int32_t>{2, 8, 18}));
}

TEST_F(DeviceApiTest, StreamWaitsForAnEventOfAnotherStream) {
  hvd_stream producer = make_stream(), consumer = make_stream();
  hvd_event produced = make_event(), consumed = make_event();
  Gate gate;
  std::vector<uint8_t> x(1 << 20, 7), y(x.size(), 0), z(x.size(), 0);
  ASSERT_EQ(launch_host_func(producer, Gate::wait, &gate), HVD_OK);
  ASSERT_EQ(api.memcpy_async(api.ctx, y.data(), kHost, x.data(), kHost,
                             x.size(), producer),
            HVD_OK);
  ASSERT_EQ(api.event_record(api.ctx, produced, producer), HVD_OK);
  ASSERT_EQ(api.stream_wait_event(api.ctx, consumer, produced), HVD_OK);
  ASSERT_EQ(api.memcpy_async(api.ctx, z.data(), kHost, y.data(), kHost,
                             y.size(), consumer),
            HVD_OK);
  ASSERT_EQ(api.event_record(api.ctx, consumed, consumer), HVD_OK);
  // Re-recording the event on an idle stream completes it, but the wait
  // already queued keeps the position it captured.
  hvd_stream idle = make_stream();
  ASSERT_EQ(api.event_record(api.ctx, produced, idle), HVD_OK);
  EXPECT_EQ(api.event_query(api.ctx, produced), HVD_OK);
  EXPECT_EQ(api.event_query(api.ctx, consumed), HVD_AGAIN);
  gate.open();
  ASSERT_EQ(api.stream_synchronize(api.ctx, consumer), HVD_OK);
  EXPECT_EQ(api.event_query(api.ctx, consumed), HVD_OK);
  EXPECT_EQ(z, x);
}

TEST_F(DeviceApiTest, NullStreamWaitBlocksTheCaller) {
  hvd_stream s = make_stream();
  hvd_event e = make_event();
  Gate gate;
  int value = 0;
  ASSERT_EQ(launch_host_func(s, Gate::wait, &gate), HVD_OK);
  ASSERT_EQ(launch_host_func(
                s, [](void* v) { *static_cast<int*>(v) = 42; }, &value),
            HVD_OK);
  ASSERT_EQ(api.event_record(api.ctx, e, s), HVD_OK);
  std::thread opener([&] { gate.open(); });
  ASSERT_EQ(api.stream_wait_event(api.ctx, nullptr, e), HVD_OK);
  EXPECT_EQ(value, 42);
  opener.join();
}

TEST_F(DeviceApiTest, EventsNeverRecordedOrOnTheNullStreamAreComplete) {
  hvd_event e = make_event();
  EXPECT_EQ(api.event_query(api.ctx, e), HVD_OK);
  ASSERT_EQ(api.event_record(api.ctx, e, nullptr), HVD_OK);
  EXPECT_EQ(api.event_query(api.ctx, e), HVD_OK);
}

TEST_F(DeviceApiTest, DestroyingAStreamFinishesItsWork) {
  hvd_stream s = nullptr;
  ASSERT_EQ(api.stream_create(api.ctx, kHost, &s), HVD_OK);
  std::vector<int64_t> a(1000, 3), b(1000, 4), c(1000, 0);
  ASSERT_EQ(api.reduce(api.ctx, kHost, HVD_INT64, HVD_OP_MAX, c.data(),
                       a.data(), b.data(), c.size(), s),
            HVD_OK);
  ASSERT_EQ(api.stream_destroy(api.ctx, s), HVD_OK);
  EXPECT_EQ(c, std::vector<int64_t>(1000, 4));
}

TEST_F(DeviceApiTest, BadArgumentsFailAtTheCallNotOnTheWorker) {
  hvd_stream s = make_stream();
  float x[2] = {1, 2};
  EXPECT_EQ(
      api.reduce(api.ctx, kHost, HVD_DTYPE_COUNT, HVD_OP_SUM, x, x, x, 2, s),
      HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api.reduce(api.ctx, kHost, HVD_FLOAT32, HVD_OP_AVERAGE, x, x, x, 2,
                       nullptr),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error()).find("AVERAGE"), std::string::npos)
      << last_error();
  EXPECT_EQ(api.scale(api.ctx, kHost, -1, x, 2, 2.0, s),
            HVD_ERR_INVALID_ARGUMENT);
  hvd_stream other = nullptr;
  EXPECT_EQ(api.stream_create(api.ctx, hvd_device{HVD_MEM_HOST, 1}, &other),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api.stream_create(api.ctx, hvd_device{HVD_MEM_DMABUF, 0}, &other),
            HVD_ERR_UNSUPPORTED);
  EXPECT_EQ(api.event_query(api.ctx, nullptr), HVD_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(api.stream_synchronize(api.ctx, s), HVD_OK);
  EXPECT_EQ(x[0], 1.0f);
}

// A batch of copies is one work item in stream order: nothing lands while
// earlier work holds the stream; then every copy, zero fill and empty copy
// at once.
TEST_F(DeviceApiTest, BatchedCopyRunsInStreamOrder) {
  hvd_stream s = make_stream();
  Gate gate;
  std::vector<uint8_t> src(100), dst(300, 0xee);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i);
  const std::vector<CopyEntry> copies = {{dst.data(), src.data() + 3, 17},
                                         {dst.data() + 17, nullptr, 5},
                                         {dst.data() + 22, src.data(), 0},
                                         {dst.data() + 100, src.data(), 100}};
  ASSERT_EQ(launch_host_func(s, Gate::wait, &gate), HVD_OK);
  ASSERT_EQ(batched_copy(kHost, copies, s), HVD_OK) << last_error();
  EXPECT_EQ(dst[0], 0xee);
  gate.open();
  ASSERT_EQ(api.stream_synchronize(api.ctx, s), HVD_OK);
  std::vector<uint8_t> want(300, 0xee);
  std::memcpy(want.data(), src.data() + 3, 17);
  std::memset(want.data() + 17, 0, 5);
  std::memcpy(want.data() + 100, src.data(), 100);
  EXPECT_EQ(dst, want);
  // The kernels for CUDA memory are not what a host stream runs.
  EXPECT_EQ(batched_copy(hvd_device{HVD_MEM_DMABUF, 0}, copies, s),
            HVD_ERR_UNSUPPORTED);
}

// A fake stream fails as a CUDA stream does: work that failed fails every
// event recorded after it, and the stream skips what follows.
TEST(HostStreamTest, FailureIsStickyAndReachesLaterEventsOnly) {
  HostStream stream;
  HostEvent before, after;
  int ran = 0;
  stream.enqueue([&] { ++ran; });
  before.record(&stream);
  stream.enqueue_fallible([] { return std::string("copy 3 failed"); });
  stream.enqueue([&] { ++ran; });
  after.record(&stream);
  after.wait();
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(before.complete() && after.complete());
  EXPECT_EQ(before.failure(), "");
  EXPECT_EQ(after.failure(), "copy 3 failed");
}

TEST_F(DeviceApiTest, CudaIsLoadedOnDemandAndAbsentHereWithoutFailing) {
  const int32_t gpus = api.device_count(api.ctx, HVD_MEM_CUDA);
  ASSERT_GE(gpus, 0);
  const hvd_device cuda{HVD_MEM_CUDA, gpus};  // one past the last
  hvd_stream s = nullptr;
  EXPECT_EQ(api.stream_create(api.ctx, cuda, &s), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error()).find("CUDA device"), std::string::npos)
      << last_error();
  void* p = nullptr;
  EXPECT_EQ(api.mem_alloc(api.ctx, cuda, 16, &p), HVD_ERR_INVALID_ARGUMENT);
  // This test program has no CUDA kernels library next to it (and here no
  // device): CUDA kernels are unsupported, not a crash.
  float x = 1;
  EXPECT_EQ(api.reduce(api.ctx, hvd_device{HVD_MEM_CUDA, 0}, HVD_FLOAT32,
                       HVD_OP_SUM, &x, &x, &x, 1, nullptr),
            HVD_ERR_UNSUPPORTED);
  EXPECT_EQ(api.scale(api.ctx, hvd_device{HVD_MEM_CUDA, 0}, HVD_FLOAT32, &x, 1,
                      2.0, nullptr),
            HVD_ERR_UNSUPPORTED);
}

}  // namespace
}  // namespace hvd::test
