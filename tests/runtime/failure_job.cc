// A rank killed in the middle of a collective (horovodrun -np N, N >= 3):
// the victim (rank 1) dies by SIGKILL inside a large allreduce; the
// others must fail that allreduce with HVD_ERR_PEER_FAILED and a message
// naming rank 1, refuse later ops the same way, and shut down without
// hanging. Each survivor prints "survivor R saw rank 1 fail"; the test's
// driver checks those lines and that horovodrun exits non-zero.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "fault_arm.h"
#include "mp_support.h"

using namespace mp;

int main(int argc, char** argv) {
  // horovodrun sends SIGTERM to the survivors once the victim dies; they
  // have its grace period to report.
  signal(SIGTERM, SIG_IGN);
  if (!init_job(argc > 1 ? argv[1] : nullptr)) return 1;
  // Warm up, so the victim dies inside the data path, not at start.
  Buffer small(HVD_FLOAT32, {1024});
  run_op(make_op(HVD_COLL_ALLREDUCE, "warm", &small.desc, 1));

  // The victim dies at its first data transfer of a large allreduce: its
  // transport's fault hook (built with the tests) raises SIGKILL there, on
  // the background thread, so the others are inside the collective
  // whatever the timing.
  Buffer big(HVD_FLOAT32, {int64_t{16} << 20});  // 64 MiB
  if (R == 1 &&
      hvd_test::arm_transport_fault(hvd_plugin::fault::kKill, 1) == 0) {
    std::printf("FAIL: no transport has the fault hook "
                "(HOROVOD_FAULT_HOOKS off)\n");
    return 1;
  }
  hvd_handle* h = nullptr;
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "big", &big.desc, 1);
  hvd_status s = hvd_enqueue(&op, &h);
  std::string message = hvd_last_error();
  double waited = 0;
  if (s == HVD_OK) {
    auto start = std::chrono::steady_clock::now();
    s = hvd_wait(h, 30000);
    waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    message = hvd_handle_message(h);
    hvd_release(h);
  }
  bool ok =
      s == HVD_ERR_PEER_FAILED && message.find("rank 1") != std::string::npos;
  if (!ok) {
    std::printf("rank %d: FAIL: big: %s: %s\n", R, hvd_status_string(s),
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
    std::printf("rank %d: FAIL: later op: %s: %s\n", R, hvd_status_string(ls),
                later_message.c_str());
  }
  // Reported before shutting down: horovodrun's grace period is short.
  if (ok) {
    std::printf("survivor %d saw rank 1 fail after %.2f s: %s\n", R, waited,
                message.c_str());
  }
  std::fflush(stdout);
  hvd_shutdown();
  return ok ? 0 : 1;
}
