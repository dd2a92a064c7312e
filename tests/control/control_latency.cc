// Round trip of one negotiation step (gather of 100 bytes from every rank,
// then a broadcast of 100 bytes) over in-process ranks, as the median over
// many steps. Usage: control-latency [steps] [ranks...]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "harness.h"

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  int steps = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::vector<int> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {2, 3, 4};

  for (int size : sizes) {
    hvd::test::FakeStore store;
    std::vector<double> micros;
    auto errors = hvd::test::run_ranks(
        store, size, hvd::test::all_ranks(size), hvd::test::test_options(),
        [&](hvd::ControlPlane& plane) {
          std::vector<uint8_t> message(100, static_cast<uint8_t>(plane.rank()));
          for (int warm = 0; warm < 50; ++warm) {
            plane.gather(message);
            plane.broadcast(message);
          }
          for (int step = 0; step < steps; ++step) {
            auto start = Clock::now();
            plane.gather(message);
            plane.broadcast(message);
            if (plane.rank() == 0)
              micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
          }
        });
    for (auto& e : errors)
      if (e) {
        std::fprintf(stderr, "%d ranks: %s\n", size, hvd::test::describe(e).c_str());
        return 1;
      }
    std::sort(micros.begin(), micros.end());
    std::printf("%d ranks: gather+broadcast of 100 B: median %.1f us, p90 %.1f us (%d steps)\n",
                size, micros[micros.size() / 2], micros[micros.size() * 9 / 10], steps);
  }
  return 0;
}
