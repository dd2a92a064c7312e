// One rank of a control-plane job, run by horovodrun:
//
//   control-job ok            rounds of gather + broadcast, checked; exit 0
//   control-job kill VICTIM   VICTIM SIGKILLs itself mid-run; the others
//                             must report it and exit 3
//   control-job stop VICTIM   VICTIM SIGSTOPs itself (alive, silent); the
//                             others must report it and exit 3
//   control-job latency [N]   rank 0 prints the median round trip of N
//                             steps of gather + broadcast of 100 bytes
//
// The configuration, bootstrap and control plane are the real ones. The
// survivors hold SIGTERM back while they wait, so horovodrun's teardown
// (it sees the victim die) cannot cut short what this test checks: that
// every survivor names the victim on its own.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "config/config.h"
#include "control/control_plane.h"

namespace {

std::vector<uint8_t> message_of(int rank, int round) {
  std::vector<uint8_t> bytes(100);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(rank + round + i);
  return bytes;
}

int run(const std::string& mode, int victim) {
  if (mode != "ok") {
    // Before any thread starts, so every thread inherits the mask.
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);
  }
  auto config = hvd::Config::load();
  auto bootstrap = hvd::Bootstrap::create(config);
  hvd::ControlPlane plane(*bootstrap, config);
  const int rank = plane.rank();

  if (mode == "latency") {
    int steps = victim > 0 ? victim : 2000;
    std::vector<uint8_t> message(100, static_cast<uint8_t>(rank));
    std::vector<double> micros;
    for (int step = -50; step < steps; ++step) {
      auto start = std::chrono::steady_clock::now();
      plane.gather(message);
      plane.broadcast(message);
      if (step >= 0)
        micros.push_back(std::chrono::duration<double, std::micro>(
                             std::chrono::steady_clock::now() - start)
                             .count());
    }
    std::sort(micros.begin(), micros.end());
    if (rank == 0)
      std::printf("%d processes: gather+broadcast of 100 B: median %.1f us\n",
                  plane.size(), micros[micros.size() / 2]);
    return 0;
  }

  if (mode == "ok") {
    for (int round = 0; round < 200; ++round) {
      auto gathered = plane.gather(message_of(rank, round));
      if (rank == 0)
        for (int r = 0; r < plane.size(); ++r)
          if (gathered[r] != message_of(r, round)) {
            std::fprintf(stderr,
                         "rank 0: round %d: wrong message from rank %d\n",
                         round, r);
            return 1;
          }
      if (plane.broadcast(message_of(1000, round)) != message_of(1000, round)) {
        std::fprintf(stderr, "rank %d: round %d: wrong broadcast\n", rank,
                     round);
        return 1;
      }
    }
    if (plane.failure()) {
      std::fprintf(stderr, "rank %d: unexpected failure: %s\n", rank,
                   plane.failure()->reason.c_str());
      return 1;
    }
    std::printf("rank %d: 200 rounds ok\n", rank);
    return 0;
  }

  auto started = std::chrono::steady_clock::now();
  try {
    for (int round = 0;; ++round) {
      if (round == 50 && rank == victim) {
        std::fprintf(stderr, "rank %d: stopping myself with %s\n", rank,
                     mode == "kill" ? "SIGKILL" : "SIGSTOP");
        std::fflush(stderr);
        raise(mode == "kill" ? SIGKILL : SIGSTOP);
      }
      plane.gather(message_of(rank, round));
      plane.broadcast(message_of(1000, round));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } catch (const hvd::Error& e) {
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    std::fprintf(stderr,
                 "rank %d: control plane error (peer %d, after %.1f s): %s\n",
                 rank, e.peer(), seconds, e.what());
    return 3;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "ok";
  int victim = argc > 2 ? std::atoi(argv[2]) : -1;
  try {
    return run(mode, victim);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "control-job: %s\n", e.what());
    return 2;
  }
}
