// Who owns an op, seen through the public C API in one process: its
// process set holds it from hvd_enqueue until it completes, once. A name is
// taken while its op is in flight and free again when it completes, and
// removing a set fails each op it still holds exactly once.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <string>

#include "mp_support.h"

namespace {

using mp::Buffer;
using mp::make_op;

// An adapter whose ops wait for their inputs until `ready`, and which
// counts how often it is told an op is done.
struct HeldInputs {
  std::atomic<bool> ready{false};
  std::atomic<int> done{0};
  hvd_status last = HVD_OK;
};

// Its ops are allreduces, whose outputs are their inputs.
hvd_status held_allocate(void*, void*, int32_t, const hvd_tensor*, int32_t,
                         const int64_t*, hvd_tensor*) {
  return HVD_ERR_UNSUPPORTED;
}
hvd_status held_ready(void* ctx, void*) {
  return static_cast<HeldInputs*>(ctx)->ready ? HVD_OK : HVD_AGAIN;
}
void held_done(void* ctx, void*, hvd_status status, const char*) {
  auto* held = static_cast<HeldInputs*>(ctx);
  held->last = status;
  ++held->done;
}
hvd_adapter_api held_table() {
  return {sizeof(hvd_adapter_api),
          nullptr,
          HVD_PLUGIN_ADAPTER,
          HVD_ABI_VERSION_MAJOR,
          HVD_ABI_VERSION_MINOR,
          "held",
          "1",
          held_allocate,
          held_ready,
          held_done,
          HVD_THREADING_BACKGROUND};
}

void count_call(void* user, hvd_status, const char*) {
  ++*static_cast<std::atomic<int>*>(user);
}

// A runtime with dynamic process sets and an adapter that holds inputs.
class ApiOwnership : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("HOROVOD_DYNAMIC_PROCESS_SETS", "1", 1);
    ASSERT_EQ(hvd_init(nullptr), HVD_OK) << hvd_last_error();
    unsetenv("HOROVOD_DYNAMIC_PROCESS_SETS");
    ASSERT_EQ(hvd_register_adapter(&table_, &held_, &adapter_), HVD_OK)
        << hvd_last_error();
  }
  void TearDown() override {
    EXPECT_EQ(hvd_shutdown(), HVD_OK) << hvd_last_error();
    EXPECT_EQ(hvd_unregister_adapter(adapter_), HVD_OK) << hvd_last_error();
  }
  // An allreduce on `set` that waits for `held_`, counting its callbacks
  // in `calls`.
  hvd_handle* enqueue_held(const std::string& name, int32_t set, Buffer& buffer,
                           std::atomic<int>& calls) {
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &buffer.desc, 1);
    op.process_set = set;
    op.adapter = adapter_;
    op.done = count_call;
    op.user = &calls;
    hvd_handle* h = nullptr;
    EXPECT_EQ(hvd_enqueue(&op, &h), HVD_OK) << hvd_last_error();
    return h;
  }

  // Registered: both outlive the registration.
  const hvd_adapter_api table_ = held_table();
  HeldInputs held_;
  hvd_adapter* adapter_ = nullptr;
};

TEST_F(ApiOwnership, ANameIsTakenInFlightAndFreeOnceItsOpCompletes) {
  Buffer b(HVD_FLOAT32, {2});
  std::atomic<int> calls{0};
  hvd_handle* h = enqueue_held("grad", 0, b, calls);
  ASSERT_NE(h, nullptr);
  hvd_op dup = make_op(HVD_COLL_ALLREDUCE, "grad", &b.desc, 1);
  hvd_handle* refused = nullptr;
  EXPECT_EQ(hvd_enqueue(&dup, &refused), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(hvd_last_error()).find("already in flight on process set 0"),
      std::string::npos)
      << hvd_last_error();
  EXPECT_EQ(refused, nullptr);

  held_.ready = true;
  ASSERT_EQ(hvd_wait(h, 30000), HVD_OK) << hvd_handle_message(h);
  hvd_release(h);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(held_.done, 1);
  // Completed: the set no longer holds it, so the name is free.
  hvd_handle* again = nullptr;
  ASSERT_EQ(hvd_enqueue(&dup, &again), HVD_OK) << hvd_last_error();
  EXPECT_EQ(hvd_wait(again, 30000), HVD_OK) << hvd_handle_message(again);
  hvd_release(again);
}

TEST_F(ApiOwnership, ATensorNamedJoinAndAJoinAreInFlightTogether) {
  Buffer b(HVD_FLOAT32, {2});
  std::atomic<int> calls{0};
  hvd_handle* tensor = enqueue_held("join", 0, b, calls);
  ASSERT_NE(tensor, nullptr);
  hvd_op join = make_op(HVD_COLL_JOIN, "", nullptr, 0);
  join.name = nullptr;
  hvd_handle* joined = nullptr;
  ASSERT_EQ(hvd_enqueue(&join, &joined), HVD_OK) << hvd_last_error();
  hvd_handle* second = nullptr;
  EXPECT_EQ(hvd_enqueue(&join, &second), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hvd_last_error())
                .find("a join is already in flight on process set 0"),
            std::string::npos)
      << hvd_last_error();

  held_.ready = true;
  EXPECT_EQ(hvd_wait(tensor, 30000), HVD_OK) << hvd_handle_message(tensor);
  EXPECT_EQ(hvd_wait(joined, 30000), HVD_OK) << hvd_handle_message(joined);
  hvd_release(tensor);
  hvd_release(joined);
  EXPECT_EQ(calls, 1);
}

TEST_F(ApiOwnership, RemovingASetFailsEachOpItHoldsOnce) {
  int32_t world[] = {0};
  int32_t id = -1;
  ASSERT_EQ(hvd_add_process_set(world, 1, &id), HVD_OK) << hvd_last_error();
  Buffer a(HVD_FLOAT32, {2}), b(HVD_FLOAT32, {3});
  std::atomic<int> calls_a{0}, calls_b{0};
  hvd_handle* ha = enqueue_held("a", id, a, calls_a);
  hvd_handle* hb = enqueue_held("b", id, b, calls_b);
  ASSERT_NE(ha, nullptr);
  ASSERT_NE(hb, nullptr);

  ASSERT_EQ(hvd_remove_process_set(id), HVD_OK) << hvd_last_error();
  for (hvd_handle* h : {ha, hb}) {
    EXPECT_EQ(hvd_wait(h, 30000), HVD_ERR_ABORTED);
    EXPECT_NE(std::string(hvd_handle_message(h)).find("was removed"),
              std::string::npos)
        << hvd_handle_message(h);
    hvd_release(h);
  }
  EXPECT_EQ(calls_a, 1);
  EXPECT_EQ(calls_b, 1);
  EXPECT_EQ(held_.done, 2);
  EXPECT_EQ(held_.last, HVD_ERR_ABORTED);

  // Their names are free on set 0, and nothing of the removed set is
  // failed again when the runtime ends.
  held_.ready = true;
  std::atomic<int> calls_world{0};
  hvd_handle* h = enqueue_held("a", 0, a, calls_world);
  EXPECT_EQ(hvd_wait(h, 30000), HVD_OK) << hvd_handle_message(h);
  hvd_release(h);
  EXPECT_EQ(hvd_shutdown(), HVD_OK);
  EXPECT_EQ(calls_a, 1);
  EXPECT_EQ(calls_b, 1);
  EXPECT_EQ(calls_world, 1);
  EXPECT_EQ(held_.done, 3);
  ASSERT_EQ(hvd_init(nullptr), HVD_OK) << hvd_last_error();  // TearDown's
}

TEST_F(ApiOwnership, AnOpEnqueuedAsItsSetGoesIsRefusedOrFailsOnce) {
  int32_t world[] = {0};
  for (int round = 0; round < 20; ++round) {
    int32_t id = -1;
    ASSERT_EQ(hvd_add_process_set(world, 1, &id), HVD_OK) << hvd_last_error();
    hvd_handle* removal = nullptr;
    ASSERT_EQ(hvd_enqueue_remove_process_set(id, &removal), HVD_OK)
        << hvd_last_error();
    // The removal races this op: taken into the set's table before it goes,
    // the op is failed once; after, it is refused.
    Buffer b(HVD_FLOAT32, {2});
    std::atomic<int> calls{0};
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, "late", &b.desc, 1);
    op.process_set = id;
    op.adapter = adapter_;
    op.done = count_call;
    op.user = &calls;
    hvd_handle* h = nullptr;
    hvd_status s = hvd_enqueue(&op, &h);
    if (s == HVD_OK) {
      EXPECT_EQ(hvd_wait(h, 30000), HVD_ERR_ABORTED);
      EXPECT_NE(std::string(hvd_handle_message(h)).find("removed"),
                std::string::npos)
          << hvd_handle_message(h);
      hvd_release(h);
      EXPECT_EQ(calls, 1);
    } else {
      EXPECT_EQ(s, HVD_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(hvd_last_error()).find("does not exist"),
                std::string::npos)
          << hvd_last_error();
      EXPECT_EQ(calls, 0);
    }
    EXPECT_EQ(hvd_wait(removal, 30000), HVD_OK) << hvd_handle_message(removal);
    hvd_release(removal);
  }
}

}  // namespace
