// A rank killed in the middle of a collective (horovodrun -np N, N >= 3):
// the victim (rank 1) dies by SIGKILL with a large allreduce in flight; the
// others must fail that allreduce with HVD_ERR_PEER_FAILED and a message
// naming rank 1, refuse later ops the same way, and shut down without
// hanging. Each survivor prints "survivor R saw rank 1 fail"; the test's
// driver checks those lines and that horovodrun exits non-zero.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "mp_support.h"

using namespace mp;

int main(int argc, char** argv) {
  // horovodrun sends SIGTERM to the survivors once the victim dies; they
  // have its grace period to report.
  signal(SIGTERM, SIG_IGN);
  hvd_init_options options{};
  options.struct_size = sizeof options;
  options.config_path = argc > 1 ? argv[1] : nullptr;
  if (hvd_init(&options) != HVD_OK) {
    std::printf("FAIL: hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  const int rank = hvd_rank();
  // Warm up, so the victim dies inside the data path, not at start.
  Buffer small(HVD_FLOAT32, {1024});
  run_op(make_op(HVD_COLL_ALLREDUCE, "warm", &small.desc, 1));

  // Every rank enqueues a large allreduce, then a small one. The victim
  // dies in the small one's completion callback if the large one is still
  // moving then: inside the large collective. Where the large one finished
  // first (the two may be negotiated in different rounds), all go again.
  // A survivor may still finish the victim's last large allreduce (it had
  // every part it needed); it then sees the failure when it enqueues.
  Buffer big(HVD_FLOAT32, {int64_t{16} << 20});  // 64 MiB
  Buffer tiny(HVD_FLOAT64, {4});  // another dtype: never fused with big
  hvd_status s = HVD_OK;
  std::string message;
  double waited = 0;
  for (int attempt = 0; attempt < 100 && s == HVD_OK; ++attempt) {
    const std::string big_name = "big." + std::to_string(attempt);
    const std::string trigger_name = "trigger." + std::to_string(attempt);
    hvd_handle* h = nullptr;
    hvd_handle* t = nullptr;
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, big_name, &big.desc, 1);
    hvd_op trigger = make_op(HVD_COLL_ALLREDUCE, trigger_name, &tiny.desc, 1);
    // A rank that finished the last attempt's large allreduce before the
    // victim died learns of it here.
    if ((s = hvd_enqueue(&op, &h)) != HVD_OK) {
      message = hvd_last_error();
      break;
    }
    if (rank == 1) {
      trigger.user = h;
      trigger.done = [](void* user, hvd_status, const char*) {
        int32_t finished = 1;
        hvd_poll(static_cast<hvd_handle*>(user), &finished);
        if (!finished) raise(SIGKILL);
      };
    }
    if (hvd_enqueue(&trigger, &t) != HVD_OK) {
      std::printf("FAIL: enqueue: %s\n", hvd_last_error());
      return 1;
    }
    auto start = std::chrono::steady_clock::now();
    s = hvd_wait(h, 30000);
    waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    message = hvd_handle_message(h);
    hvd_wait(t, 30000);
    hvd_release(t);
    hvd_release(h);
  }
  bool ok =
      s == HVD_ERR_PEER_FAILED && message.find("rank 1") != std::string::npos;
  if (!ok) {
    std::printf("rank %d: FAIL: big: %s: %s\n", rank, hvd_status_string(s),
                message.c_str());
  }
  // Later ops are refused, naming the rank.
  hvd_handle* later = nullptr;
  hvd_op again = make_op(HVD_COLL_ALLREDUCE, "later", &small.desc, 1);
  hvd_status ls = hvd_enqueue(&again, &later);
  std::string later_message = hvd_last_error();
  if (ls == HVD_OK) {
    ls = hvd_wait(later, 30000);
    later_message = hvd_handle_message(later);
    hvd_release(later);
  }
  if (ls != HVD_ERR_PEER_FAILED ||
      later_message.find("rank 1") == std::string::npos) {
    ok = false;
    std::printf("rank %d: FAIL: later op: %s: %s\n", rank,
                hvd_status_string(ls), later_message.c_str());
  }
  // Reported before shutting down: horovodrun's grace period is short.
  if (ok) {
    std::printf("survivor %d saw rank 1 fail after %.2f s: %s\n", rank, waited,
                message.c_str());
  }
  std::fflush(stdout);
  hvd_shutdown();
  return ok ? 0 : 1;
}
