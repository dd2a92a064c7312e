// The public C API in one process (the single-process bootstrap): init and
// queries, every collective on one rank, handles (poll, wait with timeout,
// callbacks, outputs), adapters, errors, re-init and fork.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "mp_support.h"
#include "tensor_of.h"

namespace {

using mp::Buffer;
using mp::make_op;

class Api : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(hvd_init(nullptr), HVD_OK) << hvd_last_error();
  }
  void TearDown() override {
    EXPECT_EQ(hvd_shutdown(), HVD_OK) << hvd_last_error();
  }
};

hvd_status run(const hvd_op& op, hvd_handle** keep = nullptr) {
  hvd_handle* h = nullptr;
  hvd_status s = hvd_enqueue(&op, &h);
  if (s != HVD_OK) return s;
  s = hvd_wait(h, 30000);
  if (keep) {
    *keep = h;
  } else {
    hvd_release(h);
  }
  return s;
}

TEST(ApiLifecycle, QueriesInitShutdownAndReinit) {
  EXPECT_EQ(hvd_is_initialized(), 0);
  EXPECT_EQ(hvd_rank(), -1);
  EXPECT_EQ(hvd_size(), -1);
  Buffer b(HVD_FLOAT32, {2});
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "x", &b.desc, 1);
  hvd_handle* h = nullptr;
  EXPECT_EQ(hvd_enqueue(&op, &h), HVD_ERR_SHUT_DOWN);
  EXPECT_NE(std::string(hvd_last_error()).find("not initialised"),
            std::string::npos);
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(hvd_init(nullptr), HVD_OK) << hvd_last_error();
    EXPECT_EQ(hvd_is_initialized(), 1);
    EXPECT_EQ(hvd_rank(), 0);
    EXPECT_EQ(hvd_size(), 1);
    EXPECT_EQ(hvd_local_rank(), 0);
    EXPECT_EQ(hvd_local_size(), 1);
    EXPECT_EQ(hvd_cross_rank(), 0);
    EXPECT_EQ(hvd_cross_size(), 1);
    EXPECT_EQ(hvd_init(nullptr), HVD_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(hvd_last_error()).find("already initialised"),
              std::string::npos);
    EXPECT_EQ(run(op), HVD_OK);
    EXPECT_EQ(hvd_shutdown(), HVD_OK);
    EXPECT_EQ(hvd_is_initialized(), 0);
  }
  EXPECT_STREQ(hvd_status_string(HVD_ERR_MISMATCH), "mismatch across ranks");
}

TEST_F(Api, EveryCollectiveOnOneRank) {
  Buffer a(HVD_FLOAT32, {3}), out(HVD_FLOAT32, {3});
  for (int i = 0; i < 3; ++i) a.set(i, i + 1);
  hvd_op ar = make_op(HVD_COLL_ALLREDUCE, "ar", &a.desc, 1, &out.desc);
  ar.op = HVD_OP_AVERAGE;
  ar.postscale = 2;
  ASSERT_EQ(run(ar), HVD_OK) << hvd_last_error();
  EXPECT_EQ(out.get(2), 6);
  EXPECT_EQ(a.get(2), 3);  // not in place

  hvd_handle* h = nullptr;
  ASSERT_EQ(run(make_op(HVD_COLL_ALLGATHER, "ag", &a.desc, 1), &h), HVD_OK);
  hvd_tensor t{};
  ASSERT_EQ(hvd_handle_output(h, 0, &t), HVD_OK);
  EXPECT_EQ(t.ndim, 1);
  EXPECT_EQ(t.shape[0], 3);
  EXPECT_EQ(static_cast<const float*>(t.data)[1], 2.0f);
  EXPECT_EQ(hvd_handle_output(h, 1, &t), HVD_ERR_INVALID_ARGUMENT);
  hvd_release(h);

  ASSERT_EQ(run(make_op(HVD_COLL_BROADCAST, "bc", &a.desc, 1)), HVD_OK);
  EXPECT_EQ(a.get(0), 1);

  int32_t splits[] = {3};
  hvd_op a2a = make_op(HVD_COLL_ALLTOALL, "a2a", &a.desc, 1);
  a2a.splits = splits;
  a2a.split_count = 1;
  ASSERT_EQ(run(a2a, &h), HVD_OK) << hvd_handle_message(h);
  const int32_t* got = nullptr;
  int32_t n = 0;
  ASSERT_EQ(hvd_handle_received_splits(h, &got, &n), HVD_OK);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(got[0], 3);
  hvd_release(h);

  Buffer rs(HVD_INT32, {3});
  Buffer in(HVD_INT32, {3});
  for (int i = 0; i < 3; ++i) in.set(i, 10 * i);
  ASSERT_EQ(run(make_op(HVD_COLL_REDUCESCATTER, "rs", &in.desc, 1, &rs.desc)),
            HVD_OK);
  EXPECT_EQ(rs.get(2), 20);

  hvd_op bar = make_op(HVD_COLL_BARRIER, "", nullptr, 0);
  bar.name = nullptr;
  EXPECT_EQ(run(bar), HVD_OK);

  hvd_op join = make_op(HVD_COLL_JOIN, "", nullptr, 0);
  join.name = nullptr;
  ASSERT_EQ(run(join, &h), HVD_OK);
  ASSERT_EQ(hvd_handle_output(h, 0, &t), HVD_OK);
  EXPECT_EQ(*static_cast<const int32_t*>(t.data), 0);
  hvd_release(h);
}

TEST_F(Api, EveryDtype) {
  for (hvd_dtype d = 0; d < HVD_DTYPE_COUNT; ++d) {
    Buffer b(d, {5});
    for (int i = 0; i < 5; ++i) b.set(i, i % 2);
    std::string name = std::string("dtype.") + mp::dtype_name(d);
    EXPECT_EQ(run(make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1)), HVD_OK)
        << name << ": " << hvd_last_error();
    EXPECT_EQ(b.get(3), 1) << name;
  }
}

TEST_F(Api, ManyThreadsEnqueueAtOnce) {
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &good] {
      for (int i = 0; i < 50; ++i) {
        Buffer b(HVD_INT32, {3});
        b.set(1, t * 1000 + i);
        std::string name =
            "thread." + std::to_string(t) + "." + std::to_string(i);
        if (run(make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1)) == HVD_OK &&
            b.get(1) == t * 1000 + i) {
          ++good;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good, 200);
}

std::atomic<int> g_calls{0};
std::atomic<hvd_status> g_status{HVD_OK};
void on_done(void* user, hvd_status status, const char*) {
  g_status = status;
  *static_cast<int*>(user) += 1;
  ++g_calls;
}

TEST_F(Api, CallbackPollAndWait) {
  Buffer b(HVD_FLOAT64, {4});
  int mine = 0;
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "cb", &b.desc, 1);
  op.done = on_done;
  op.user = &mine;
  hvd_handle* h = nullptr;
  ASSERT_EQ(hvd_enqueue(&op, &h), HVD_OK);
  EXPECT_EQ(hvd_wait(h, -1), HVD_OK);
  int32_t done = 0;
  EXPECT_EQ(hvd_poll(h, &done), HVD_OK);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(mine, 1);  // the callback ran before the wait returned
  EXPECT_STREQ(hvd_handle_message(h), "");
  hvd_release(h);
}

// The thread in hvd_wait runs the op's cycle itself (no switch to the
// background thread and back). With both threads on one CPU, the waiter
// holds it: the callbacks run on the waiting thread, where what may not be
// called from a completion callback is refused rather than deadlocking.
struct DrivenBy {
  std::thread::id thread;
  hvd_status shutdown = HVD_OK;
};
void record_driver(void* user, hvd_status, const char*) {
  auto* seen = static_cast<DrivenBy*>(user);
  seen->thread = std::this_thread::get_id();
  seen->shutdown = hvd_shutdown();
}

// Narrows the process to one CPU for the life of the object.
class OneCpu {
 public:
  OneCpu() {
    sched_getaffinity(0, sizeof all_, &all_);
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &all_)) {
        CPU_SET(cpu, &one);
        break;
      }
    }
    ok_ = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~OneCpu() { sched_setaffinity(0, sizeof all_, &all_); }
  bool ok() const { return ok_; }

 private:
  cpu_set_t all_;
  bool ok_ = false;
};

// Runs `ops` cached allreduces (negotiated by cache bits: a round over the
// control plane is the background thread's) and counts the completion
// callbacks that ran on this, the waiting, thread.
int callbacks_on_the_waiting_thread(int ops) {
  std::vector<DrivenBy> seen(ops);
  int here = 0;
  for (int i = 0; i < ops; ++i) {
    Buffer b(HVD_FLOAT32, {3});
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, "driven", &b.desc, 1);
    op.done = record_driver;
    op.user = &seen[i];
    EXPECT_EQ(run(op), HVD_OK) << hvd_last_error();
    if (seen[i].thread == std::this_thread::get_id()) {
      ++here;
      EXPECT_EQ(seen[i].shutdown, HVD_ERR_INVALID_ARGUMENT);
    }
  }
  return here;
}

TEST(ApiProgress, TheWaitingThreadDrivesItsOp) {
  OneCpu one_cpu;
  ASSERT_TRUE(one_cpu.ok());
  setenv("HOROVOD_SPIN_TIME_US", "1000000", 1);
  ASSERT_EQ(hvd_init(nullptr), HVD_OK) << hvd_last_error();
  // The background thread takes one only when the scheduler preempted it
  // holding the progress lock just before the enqueue.
  EXPECT_GE(callbacks_on_the_waiting_thread(100), 1)
      << "no op of 100 ran on the waiting thread";
  EXPECT_EQ(hvd_shutdown(), HVD_OK) << hvd_last_error();
  unsetenv("HOROVOD_SPIN_TIME_US");
}

hvd_status no_outputs(void*, void*, int32_t, const hvd_tensor*, int32_t,
                      const int64_t*, hvd_tensor*) {
  return HVD_ERR_UNSUPPORTED;
}
void ignore_done(void*, void*, hvd_status, const char*) {}

// An adapter built for 1.5 is called from the background thread only
// unless its table opts in (threading); one built for 1.4 was promised
// calls from a waiting thread by its minor, and keeps that.
TEST(ApiProgress, WaitingThreadsDriveOnlyForAdaptersThatOptIn) {
  OneCpu one_cpu;
  ASSERT_TRUE(one_cpu.ok());
  setenv("HOROVOD_SPIN_TIME_US", "1000000", 1);
  ASSERT_EQ(hvd_init(nullptr), HVD_OK) << hvd_last_error();
  hvd_adapter_api silent{};
  silent.struct_size = sizeof silent;
  silent.kind = HVD_PLUGIN_ADAPTER;
  silent.abi_major = HVD_ABI_VERSION_MAJOR;
  silent.abi_minor = HVD_ABI_VERSION_MINOR;
  silent.name = "silent";
  silent.version = "1";
  silent.allocate_output = no_outputs;
  silent.done = ignore_done;
  hvd_adapter_api opted_in = silent;
  opted_in.name = "opted-in";
  opted_in.threading = HVD_THREADING_SERIALIZED;
  hvd_adapter_api built_for_1_4 = silent;
  built_for_1_4.name = "1.4";
  built_for_1_4.abi_minor = 4;
  built_for_1_4.struct_size = HVD_STRUCT_SIZE(hvd_adapter_api, done);
  for (const hvd_adapter_api* table : {&silent, &opted_in, &built_for_1_4}) {
    hvd_adapter* adapter = nullptr;
    ASSERT_EQ(hvd_register_adapter(table, nullptr, &adapter), HVD_OK)
        << hvd_last_error();
    const int here = callbacks_on_the_waiting_thread(100);
    if (table == &silent) {
      EXPECT_EQ(here, 0) << "with adapter '" << table->name << "'";
    } else {
      EXPECT_GE(here, 1) << "with adapter '" << table->name << "'";
    }
    EXPECT_EQ(hvd_unregister_adapter(adapter), HVD_OK) << hvd_last_error();
  }
  EXPECT_EQ(hvd_shutdown(), HVD_OK) << hvd_last_error();
  unsetenv("HOROVOD_SPIN_TIME_US");
}

TEST_F(Api, RejectsBadOpsWithClearMessages) {
  float data[12] = {};
  int64_t shape[] = {4, 3};
  int64_t strides[] = {1, 4};
  hvd_tensor t = hvd_test::tensor_of(data, HVD_FLOAT32, shape, 2);
  t.strides = strides;
  hvd_handle* h = nullptr;
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "strided", &t, 1);
  EXPECT_EQ(hvd_enqueue(&op, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("non-contiguous"),
            std::string::npos)
      << hvd_last_error();
  EXPECT_EQ(h, nullptr);

  t.strides = nullptr;
  t.dtype = {HVD_DL_UINT, 32, 1};
  EXPECT_EQ(hvd_enqueue(&op, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("dtype"), std::string::npos);

  t.dtype = {HVD_DL_FLOAT, 32, 1};
  op.process_set = 5;
  EXPECT_EQ(hvd_enqueue(&op, &h), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("process set 5"),
            std::string::npos);
  int32_t id = 0;
  EXPECT_EQ(hvd_add_process_set(nullptr, 0, &id), HVD_ERR_UNSUPPORTED);
  // Started without waiting: refused at once, with no handle.
  EXPECT_EQ(hvd_enqueue_remove_process_set(1, &h), HVD_ERR_UNSUPPORTED);
  EXPECT_EQ(h, nullptr);
}

// An adapter that allocates outputs itself and holds ops until released.
struct FakeFramework {
  std::atomic<bool> ready{false};
  bool broken = false;  // ready() reports a failure
  std::vector<std::vector<float>> outputs;
  std::vector<std::vector<int64_t>> shapes;
  int allocations = 0;
  int done = 0;
  hvd_status last = HVD_OK;
};

hvd_status fw_allocate(void* ctx, void*, int32_t, const hvd_tensor* like,
                       int32_t ndim, const int64_t* shape, hvd_tensor* out) {
  auto* fw = static_cast<FakeFramework*>(ctx);
  ++fw->allocations;
  size_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  fw->outputs.emplace_back(n);
  fw->shapes.emplace_back(shape, shape + ndim);
  *out = *like;
  out->data = fw->outputs.back().data();
  out->shape = fw->shapes.back().data();
  out->ndim = ndim;
  out->strides = nullptr;
  return HVD_OK;
}
hvd_status fw_ready(void* ctx, void*) {
  auto* fw = static_cast<FakeFramework*>(ctx);
  if (fw->broken) return HVD_ERR_ABORTED;
  return fw->ready ? HVD_OK : HVD_AGAIN;
}
void fw_done(void* ctx, void*, hvd_status status, const char*) {
  auto* fw = static_cast<FakeFramework*>(ctx);
  ++fw->done;
  fw->last = status;
}

hvd_adapter_api adapter_table() {
  return {sizeof(hvd_adapter_api),
          nullptr,
          HVD_PLUGIN_ADAPTER,
          HVD_ABI_VERSION_MAJOR,
          HVD_ABI_VERSION_MINOR,
          "fake",
          "1",
          fw_allocate,
          fw_ready,
          fw_done,
          HVD_THREADING_BACKGROUND};
}

TEST_F(Api, CudaTensorsNeedAUsableDevice) {
  EXPECT_EQ(hvd_accepts_memory(HVD_MEM_HOST, 0), 1);
  EXPECT_EQ(hvd_accepts_memory(HVD_MEM_DMABUF, 0), 0);
  if (hvd_accepts_memory(HVD_MEM_CUDA, 0)) {
    GTEST_SKIP() << "a CUDA device is present (tests/gpu/test_torch_gpu.py "
                    "runs CUDA tensors through the core)";
  }
  float data[4] = {};
  int64_t shape[] = {4};
  hvd_tensor t =
      hvd_test::tensor_of(data, HVD_FLOAT32, shape, 1, {HVD_MEM_CUDA, 0});
  hvd_handle* h = nullptr;
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "on_gpu", &t, 1);
  EXPECT_EQ(hvd_enqueue(&op, &h), HVD_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(hvd_last_error())
                .find("allreduce 'on_gpu' input 0: CUDA device 0 is not "
                      "usable"),
            std::string::npos)
      << hvd_last_error();
  EXPECT_EQ(h, nullptr);
}

TEST_F(Api, AdapterAllocatesWaitsAndIsTold) {
  FakeFramework fw;
  fw.outputs.reserve(8);
  fw.shapes.reserve(8);
  hvd_adapter_api table = adapter_table();
  hvd_adapter* adapter = nullptr;
  ASSERT_EQ(hvd_register_adapter(&table, &fw, &adapter), HVD_OK)
      << hvd_last_error();
  Buffer b(HVD_FLOAT32, {2, 2});
  b.set(3, 7);
  hvd_op op = make_op(HVD_COLL_ALLGATHER, "fw.ag", &b.desc, 1);
  op.adapter = adapter;
  hvd_handle* h = nullptr;
  ASSERT_EQ(hvd_enqueue(&op, &h), HVD_OK);
  // Not ready: the op stays in flight.
  EXPECT_EQ(hvd_wait(h, 50), HVD_ERR_TIMEOUT);
  int32_t done = 1;
  EXPECT_EQ(hvd_poll(h, &done), HVD_OK);
  EXPECT_EQ(done, 0);
  // Its name is taken meanwhile.
  hvd_handle* h2 = nullptr;
  hvd_op dup = make_op(HVD_COLL_ALLGATHER, "fw.ag", &b.desc, 1);
  EXPECT_EQ(hvd_enqueue(&dup, &h2), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error()).find("'fw.ag'"), std::string::npos);
  EXPECT_EQ(hvd_unregister_adapter(adapter), HVD_ERR_INVALID_ARGUMENT);
  fw.ready = true;
  ASSERT_EQ(hvd_wait(h, 30000), HVD_OK) << hvd_handle_message(h);
  EXPECT_EQ(fw.allocations, 1);
  EXPECT_EQ(fw.done, 1);
  EXPECT_EQ(fw.last, HVD_OK);
  ASSERT_EQ(fw.outputs.size(), 1u);
  EXPECT_EQ(fw.outputs[0][3], 7.0f);
  EXPECT_EQ(fw.shapes[0], (std::vector<int64_t>{2, 2}));
  hvd_release(h);
  EXPECT_EQ(hvd_unregister_adapter(adapter), HVD_OK) << hvd_last_error();
  EXPECT_EQ(hvd_unregister_adapter(adapter), HVD_ERR_INVALID_ARGUMENT);
}

TEST_F(Api, FailedInputsFailTheOpWithAMessage) {
  FakeFramework fw;
  fw.broken = true;
  hvd_adapter_api table = adapter_table();
  hvd_adapter* adapter = nullptr;
  ASSERT_EQ(hvd_register_adapter(&table, &fw, &adapter), HVD_OK);
  Buffer b(HVD_FLOAT32, {2});
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "broken.inputs", &b.desc, 1);
  op.adapter = adapter;
  hvd_handle* h = nullptr;
  ASSERT_EQ(hvd_enqueue(&op, &h), HVD_OK);
  EXPECT_EQ(hvd_wait(h, 30000), HVD_ERR_ABORTED);
  std::string m = hvd_handle_message(h);
  EXPECT_NE(m.find("'broken.inputs'"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 0 could not take part"), std::string::npos) << m;
  EXPECT_EQ(fw.done, 1);
  EXPECT_EQ(fw.last, HVD_ERR_ABORTED);
  hvd_release(h);
  EXPECT_EQ(hvd_unregister_adapter(adapter), HVD_OK);
}

TEST(ApiAdapter, TableIsChecked) {
  hvd_adapter_api table = adapter_table();
  table.abi_major = HVD_ABI_VERSION_MAJOR + 1;
  hvd_adapter* adapter = nullptr;
  EXPECT_EQ(hvd_register_adapter(&table, nullptr, &adapter), HVD_ERR_VERSION);
  EXPECT_NE(std::string(hvd_last_error()).size(), 0u);
  table = adapter_table();
  table.done = nullptr;
  EXPECT_NE(hvd_register_adapter(&table, nullptr, &adapter), HVD_OK);
  EXPECT_NE(std::string(hvd_last_error()).find("done"), std::string::npos)
      << hvd_last_error();
}

TEST(ApiShutdown, FailsWhatIsPending) {
  ASSERT_EQ(hvd_init(nullptr), HVD_OK) << hvd_last_error();
  FakeFramework fw;
  hvd_adapter_api table = adapter_table();
  hvd_adapter* adapter = nullptr;
  ASSERT_EQ(hvd_register_adapter(&table, &fw, &adapter), HVD_OK);
  Buffer b(HVD_FLOAT32, {2});
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "never.ready", &b.desc, 1);
  op.adapter = adapter;
  int calls = 0;
  op.done = on_done;
  op.user = &calls;
  hvd_handle* h = nullptr;
  ASSERT_EQ(hvd_enqueue(&op, &h), HVD_OK);
  EXPECT_EQ(hvd_shutdown(), HVD_OK);
  EXPECT_EQ(hvd_wait(h, 0), HVD_ERR_SHUT_DOWN);
  EXPECT_NE(std::string(hvd_handle_message(h)).find("'never.ready'"),
            std::string::npos);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(fw.done, 1);
  EXPECT_EQ(fw.last, HVD_ERR_SHUT_DOWN);
  hvd_release(h);
  EXPECT_EQ(hvd_unregister_adapter(adapter), HVD_OK);
}

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

TEST_F(Api, ForkedChildSeesNoRuntime) {
  if (kThreadSanitizer) {
    // The child's own runtime starts threads, which TSan refuses after a
    // fork of a process with threads ("not supported").
    GTEST_SKIP() << "ThreadSanitizer cannot run threads started after a "
                    "multi-threaded fork";
  }
  Buffer b(HVD_FLOAT32, {2});
  hvd_handle* h = nullptr;
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "before.fork", &b.desc, 1);
  ASSERT_EQ(hvd_enqueue(&op, &h), HVD_OK);
  pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    if (hvd_is_initialized() != 0) code |= 1;
    if (hvd_rank() != -1) code |= 2;
    if (hvd_wait(h, 1000) != HVD_ERR_SHUT_DOWN) code |= 4;
    hvd_handle* c = nullptr;
    if (hvd_enqueue(&op, &c) != HVD_ERR_SHUT_DOWN) code |= 8;
    // A child may start a runtime of its own.
    if (hvd_init(nullptr) != HVD_OK) code |= 16;
    if (hvd_shutdown() != HVD_OK) code |= 32;
    _exit(code);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(hvd_wait(h, 30000), HVD_OK);
  hvd_release(h);
}

}  // namespace
