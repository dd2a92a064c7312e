// Jobs whose flight recorder dumps check_flight.py reads (the recorder is
// on by default: nothing here enables it).
//
//   flight_job stall   rank 1 skips allreduce 'step.3' and then computes
//                      (sleeps) without submitting anything; the others
//                      wait in it until the stall inspector ends the job.
//   flight_job signal  allreduces 'tick' until every rank has found its own
//                      dump in HOROVOD_LOG_DIR (the test sends SIGUSR1 to
//                      the pid each rank prints), then shuts down cleanly.
//   flight_job bad-entries  hvd_init must fail, naming the key, with
//                      HOROVOD_FLIGHT_RECORDER_ENTRIES out of range.
//   flight_job kill    the last rank kills itself (SIGKILL) half a second
//                      before its allreduce 'loop.20', while the others
//                      wait in it; they fail naming it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "run_job.h"

using namespace mp;

namespace {

// The op's status; its message is printed when it failed.
hvd_status allreduce(const std::string& name, Buffer& b) {
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1);
  hvd_handle* h = nullptr;
  hvd_status s = hvd_enqueue(&op, &h);
  if (s != HVD_OK) return s;
  s = hvd_wait(h, 60000);
  if (s != HVD_OK) {
    std::printf("rank %d: %s failed: %s\n", R, name.c_str(),
                hvd_handle_message(h));
  }
  hvd_release(h);
  return s;
}

int stall() {
  Buffer b(HVD_FLOAT32, {16});
  for (int step = 0; step < 6; ++step) {
    if (R == 1 && step == 3) {
      std::printf("rank 1: skipping step.3\n");
      std::fflush(stdout);
      sleep(8);  // long past the stall shutdown
      break;
    }
    if (allreduce("step." + std::to_string(step), b) != HVD_OK) break;
  }
  hvd_shutdown();
  return 0;
}

bool own_dump_exists() {
  const char* dir = getenv("HOROVOD_LOG_DIR");
  const std::string path = std::string(dir ? dir : ".") + "/flight-rank" +
                           std::to_string(R) + "-pid" +
                           std::to_string(getpid()) + ".json";
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

int signal_job() {
  std::printf("rank %d: pid %d\n", R, static_cast<int>(getpid()));
  std::fflush(stdout);
  Buffer seen(HVD_INT32, {1});
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0; std::chrono::steady_clock::now() < deadline; ++i) {
    seen.set(0, own_dump_exists() ? 1 : 0);
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, "tick", &seen.desc, 1);
    op.op = HVD_OP_MIN;
    if (run_op(op) != HVD_OK) return 1;
    if (seen.get(0) == 1) {
      std::printf("rank %d: every rank dumped after %d ticks\n", R, i);
      return hvd_shutdown() == HVD_OK ? 0 : 1;
    }
    usleep(20 * 1000);
  }
  std::printf("rank %d: FAIL: no dump within 60 s\n", R);
  return 1;
}

int kill_job() {
  Buffer b(HVD_FLOAT32, {1024});
  for (int i = 0; i < 1000; ++i) {
    if (R == N - 1 && i == 20) {
      usleep(500 * 1000);  // the others are in loop.20 by then
      raise(SIGKILL);
    }
    if (allreduce("loop." + std::to_string(i), b) != HVD_OK) return 3;
  }
  std::printf("rank %d: FAIL: the job outlived the killed rank\n", R);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode == "bad-entries") {
    hvd_init_options options{};
    options.struct_size = sizeof options;
    const hvd_status s = hvd_init(&options);
    const std::string error = s == HVD_OK ? "" : hvd_last_error();
    std::printf("hvd_init: %s\n", error.c_str());
    return s == HVD_ERR_INVALID_ARGUMENT &&
                   error.find("HOROVOD_FLIGHT_RECORDER_ENTRIES") !=
                       std::string::npos &&
                   error.find("must be 1 to 65536") != std::string::npos
               ? 0
               : 1;
  }
  if (mode != "stall" && mode != "signal" && mode != "kill") {
    return usage(argv[0], "stall|signal|kill|bad-entries");
  }
  if (!init_job(nullptr)) return 1;
  if (mode == "stall") return stall();
  if (mode == "signal") return signal_job();
  return kill_job();
}
