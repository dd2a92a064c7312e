// Cross-rank disagreements, as one job (horovodrun -np N, N >= 2): the same
// name with a different dtype, shape, op, root or collective on different
// ranks fails on every rank with HVD_ERR_MISMATCH and a message naming the
// tensor; a duplicate name in flight is refused; the runtime carries on
// afterwards. Then a configuration that differs between ranks fails
// hvd_init on every rank naming the key, and a later init succeeds.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "run_job.h"

using namespace mp;

namespace {

void expect_mismatch(const hvd_op& op, const std::string& name,
                     const std::string& detail) {
  hvd_handle* h = nullptr;
  if (hvd_enqueue(&op, &h) != HVD_OK) {
    expect(false, "enqueue " + name + ": " + hvd_last_error());
    return;
  }
  hvd_status s = hvd_wait(h, 60000);
  std::string message = hvd_handle_message(h);
  expect(s == HVD_ERR_MISMATCH,
         name + ": status " + hvd_status_string(s) + " (" + message + ")");
  expect(message.find("'" + name + "'") != std::string::npos,
         name + ": message does not name the tensor: " + message);
  expect(message.find(detail) != std::string::npos,
         name + ": message lacks '" + detail + "': " + message);
  expect(message.find("rank") != std::string::npos,
         name + ": message does not name ranks: " + message);
  std::printf("rank %d: %s failed as expected: %s\n", R, name.c_str(),
              message.c_str());
  hvd_release(h);
}

// An adapter whose ops stay unready until released: holds an op in flight.
std::atomic<bool> g_release{false};
hvd_status held_ready(void*, void*) { return g_release ? HVD_OK : HVD_AGAIN; }
hvd_status no_allocate(void*, void*, int32_t, const hvd_tensor*, int32_t,
                       const int64_t*, hvd_tensor*) {
  return HVD_ERR_UNSUPPORTED;
}
void done(void*, void*, hvd_status, const char*) {}

const hvd_adapter_api kHolder = {sizeof(hvd_adapter_api),
                                 nullptr,
                                 HVD_PLUGIN_ADAPTER,
                                 HVD_ABI_VERSION_MAJOR,
                                 HVD_ABI_VERSION_MINOR,
                                 "holder",
                                 "test",
                                 no_allocate,
                                 held_ready,
                                 done,
                                 HVD_THREADING_SERIALIZED};

void mismatches() {
  Buffer f(HVD_FLOAT32, {4}), i(HVD_INT32, {4});
  expect_mismatch(
      make_op(HVD_COLL_ALLREDUCE, "m.dtype", R == 0 ? &f.desc : &i.desc, 1),
      "m.dtype", "dtype");

  Buffer shaped(HVD_FLOAT32, {R + 2});
  expect_mismatch(make_op(HVD_COLL_ALLREDUCE, "m.shape", &shaped.desc, 1),
                  "m.shape", "shape");

  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "m.op", &f.desc, 1);
  op.op = R == 0 ? HVD_OP_MAX : HVD_OP_SUM;
  expect_mismatch(op, "m.op", "reduction op");

  hvd_op root = make_op(HVD_COLL_BROADCAST, "m.root", &f.desc, 1);
  root.root = R == 0 ? 0 : 1;
  expect_mismatch(root, "m.root", "root");

  expect_mismatch(make_op(R == 0 ? HVD_COLL_ALLGATHER : HVD_COLL_ALLREDUCE,
                          "m.kind", &f.desc, 1),
                  "m.kind", "collective");

  // Allgather: trailing dimensions must agree.
  Buffer g(HVD_FLOAT32, {2, R == 0 ? 3 : 4});
  expect_mismatch(make_op(HVD_COLL_ALLGATHER, "m.trailing", &g.desc, 1),
                  "m.trailing", "past the first dimension");
}

void duplicate_name() {
  hvd_adapter* adapter = nullptr;
  expect_ok(hvd_register_adapter(&kHolder, nullptr, &adapter), "register");
  Buffer a(HVD_FLOAT32, {4}), b(HVD_FLOAT32, {4});
  hvd_op first = make_op(HVD_COLL_ALLREDUCE, "dup", &a.desc, 1);
  first.adapter = adapter;
  hvd_handle* h = nullptr;
  expect_ok(hvd_enqueue(&first, &h), "dup");
  hvd_op second = make_op(HVD_COLL_ALLREDUCE, "dup", &b.desc, 1);
  hvd_handle* h2 = nullptr;
  hvd_status s = hvd_enqueue(&second, &h2);
  std::string message = hvd_last_error();
  expect(s == HVD_ERR_INVALID_ARGUMENT && h2 == nullptr,
         "duplicate name accepted: " + std::string(hvd_status_string(s)));
  expect(message.find("'dup'") != std::string::npos &&
             message.find("in flight") != std::string::npos,
         "duplicate name message: " + message);
  std::printf("rank %d: dup refused as expected: %s\n", R, message.c_str());
  expect(hvd_unregister_adapter(adapter) == HVD_ERR_INVALID_ARGUMENT,
         "adapter unregistered with an op in flight");
  g_release = true;
  expect(hvd_wait(h, 60000) == HVD_OK,
         std::string("dup: ") + hvd_handle_message(h));
  hvd_release(h);
  expect_ok(hvd_unregister_adapter(adapter), "unregister");
}

void still_works() {
  Buffer b(HVD_INT64, {5});
  for (size_t i = 0; i < 5; ++i) b.set(i, 1);
  if (run_op(make_op(HVD_COLL_ALLREDUCE, "after.mismatches", &b.desc, 1)) ==
      HVD_OK) {
    expect(b.get(4) == N, "allreduce after mismatches");
  }
}

void config_mismatch(const char* config) {
  setenv("HOROVOD_FUSION_THRESHOLD", std::to_string(1000 + R).c_str(), 1);
  hvd_init_options options{};
  options.struct_size = sizeof options;
  options.config_path = config;
  hvd_status s = hvd_init(&options);
  std::string message = hvd_last_error();
  expect(s == HVD_ERR_CONFIG, "init with differing configurations: " +
                                  std::string(hvd_status_string(s)) + ": " +
                                  message);
  expect(message.find("runtime.fusion_threshold") != std::string::npos,
         "config mismatch message: " + message);
  std::printf("rank %d: differing configuration refused: %s\n", R,
              message.c_str());
  if (s == HVD_OK) hvd_shutdown();
  unsetenv("HOROVOD_FUSION_THRESHOLD");
  expect_ok(hvd_init(&options), "init after");
  still_works();
  hvd_shutdown();
}

void process_set_mismatch(const char* config) {
  // Rank 0 declares set {0}, the others {0, 1}.
  int32_t ranks[] = {0, 1};
  const int32_t* sets[] = {ranks};
  int32_t sizes[] = {R == 0 ? 1 : 2};
  hvd_init_options options{};
  options.struct_size = sizeof options;
  options.config_path = config;
  options.process_sets = sets;
  options.process_set_sizes = sizes;
  options.process_set_count = 1;
  hvd_status s = hvd_init(&options);
  std::string message = hvd_last_error();
  expect(s == HVD_ERR_MISMATCH &&
             message.find("process sets differ") != std::string::npos,
         "differing process sets: " + std::string(hvd_status_string(s)) + ": " +
             message);
  std::printf("rank %d: differing process sets refused: %s\n", R,
              message.c_str());
  if (s == HVD_OK) hvd_shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  const char* config = argc > 1 ? argv[1] : nullptr;
  JobOptions options;
  // Each initialises the runtime again, on its own.
  options.after_shutdown = [config] {
    config_mismatch(config);
    process_set_mismatch(config);
  };
  return run_once(
      "mismatch", config,
      [] {
        if (N < 2) {
          expect(false, "needs at least 2 ranks");
          return;
        }
        mismatches();
        duplicate_name();
        still_works();
      },
      options);
}
