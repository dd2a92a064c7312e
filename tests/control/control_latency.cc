// Round trip of one negotiation step (a gather of 100 bytes from every rank,
// then a broadcast of 100 bytes) over in-process ranks: the median over many
// steps. Unless --quick, also the CPU time the ranks use while nobody calls
// (it must stay near zero: nothing spins) and over 1000 one-millisecond
// negotiation cycles.
//
// Usage: control-latency [--quick] [--spin-us=N] [--arity=K] [steps] [ranks...]
#include <sys/resource.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness.h"

namespace {

using Clock = std::chrono::steady_clock;

struct RoundTrip {
  double median_us = 0, p90_us = 0;
};

RoundTrip measure_round_trip(int size, const hvd::ControlPlaneOptions& options,
                             int steps) {
  hvd::test::FakeStore store;
  std::vector<double> micros;
  auto errors = hvd::test::run_ranks(
      store, size, hvd::test::all_ranks(size), options,
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
            micros.push_back(
                std::chrono::duration<double, std::micro>(Clock::now() - start)
                    .count());
        }
      });
  for (auto& e : errors)
    if (e) throw std::runtime_error(hvd::test::describe(e));
  std::sort(micros.begin(), micros.end());
  return {micros[micros.size() / 2], micros[micros.size() * 9 / 10]};
}

double cpu_seconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) /
             1e6;
}

struct CpuUse {
  double idle_ms_per_s = 0, cycles_ms = 0;
};

CpuUse measure_cpu(int size, const hvd::ControlPlaneOptions& options) {
  hvd::test::FakeStore store;
  std::mutex mutex;
  std::condition_variable go;
  int ready = 0;
  bool cycling = false;
  double marks[3] = {0, 0, 0};
  auto errors = hvd::test::run_ranks(
      store, size, hvd::test::all_ranks(size), options,
      [&](hvd::ControlPlane& plane) {
        std::unique_lock<std::mutex> lock(mutex);
        if (++ready == size) {
          lock.unlock();
          marks[0] = cpu_seconds();
          std::this_thread::sleep_for(std::chrono::seconds(1));
          marks[1] = cpu_seconds();
          lock.lock();
          cycling = true;
          go.notify_all();
        }
        go.wait(lock, [&] { return cycling; });
        lock.unlock();
        for (int cycle = 0; cycle < 1000; ++cycle) {
          plane.gather({1});
          plane.broadcast({2});
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (plane.rank() == 0) marks[2] = cpu_seconds();
      });
  for (auto& e : errors)
    if (e) throw std::runtime_error(hvd::test::describe(e));
  return {(marks[1] - marks[0]) * 1e3, (marks[2] - marks[1]) * 1e3};
}

}  // namespace

int main(int argc, char** argv) {
  auto options = hvd::test::test_options();
  int steps = 2000;
  bool quick = false, have_steps = false;
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg.rfind("--spin-us=", 0) == 0) {
      options.spin_time =
          std::chrono::microseconds(std::atoi(arg.c_str() + 10));
    } else if (arg.rfind("--arity=", 0) == 0) {
      options.tree_arity = std::atoi(arg.c_str() + 8);
    } else if (!have_steps) {
      steps = std::atoi(arg.c_str());
      have_steps = true;
    } else {
      sizes.push_back(std::atoi(arg.c_str()));
    }
  }
  if (sizes.empty()) sizes = {2, 3, 4};

  try {
    for (int size : sizes) {
      RoundTrip trip = measure_round_trip(size, options, steps);
      std::printf(
          "%d ranks: gather+broadcast of 100 B: median %.1f us, p90 %.1f us "
          "(%d steps)",
          size, trip.median_us, trip.p90_us, steps);
      if (!quick) {
        CpuUse cpu = measure_cpu(size, options);
        std::printf(
            "; CPU of all ranks: %.1f ms per idle second, %.0f ms over 1000 "
            "one-ms cycles",
            cpu.idle_ms_per_s, cpu.cycles_ms);
      }
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "control-latency: %s\n", e.what());
    return 1;
  }
  return 0;
}
