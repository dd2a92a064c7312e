#include "step_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "common/error.h"
#include "config/config.h"
#include "horovod/horovod.h"
#include "measure.h"
#include "training_step.h"

namespace hvd_bench {
namespace {

using hvd::Error;
using Clock = std::chrono::steady_clock;

struct StepPlan {
  std::string description;
  std::vector<hvd_step::TensorSpec> tensors;  // in submission order
};

StepPlan plan_for(const std::string& step) {
  StepPlan p;
  auto add = [&](int64_t elements, const std::string& name) {
    p.tensors.push_back({elements, name});
  };
  if (step == "training") {
    p.tensors = hvd_step::backward_pass(200, 1 << 10, 4 << 20);
    p.description = "200 tensors, 1 KiB to 4 MiB, in reverse order";
  } else if (step == "names100") {
    for (int k = 0; k < 100; ++k) add(1, "named." + std::to_string(k));
    p.description = "100 named tensors of 4 B";
  } else if (step == "small") {
    for (int k = 0; k < 256; ++k) add(1024, "small." + std::to_string(k));
    p.description = "256 tensors of 4 KiB";
  } else if (step == "large") {
    for (int k = 0; k < 4; ++k) add(8 << 20, "large." + std::to_string(k));
    p.description = "4 tensors of 32 MiB";
  } else {
    throw std::invalid_argument("--step: unknown step '" + step +
                                "' (training, names100, small, large)");
  }
  return p;
}

class StepRunner {
 public:
  StepRunner(std::vector<hvd_step::TensorSpec> tensors, int rank, int size,
             std::chrono::milliseconds timeout)
      : step_(std::move(tensors), HVD_OP_SUM, rank),
        rank_(rank),
        size_(size),
        timeout_(timeout) {}

  uint64_t bytes() const { return step_.bytes(); }
  size_t tensors() const { return step_.tensors().size(); }

  // One step, in place; returns its time on this rank.
  double run() {
    auto start = Clock::now();
    const hvd_step::StepResult r = step_.run(timeout_.count());
    if (!r.ok()) throw Error(r.status, "step: " + r.message);
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  // Runs a step on values that name the rank and checks the sums.
  void verify() {
    std::vector<std::vector<float>>& data = step_.data();
    for (auto& d : data) {
      for (size_t j = 0; j < d.size(); ++j)
        d[j] = static_cast<float>(rank_ + 1 + j % 3);
    }
    run();
    for (size_t i = 0; i < data.size(); ++i) {
      for (size_t j = 0; j < data[i].size(); j += 61) {
        float want = static_cast<float>(size_ * (size_ + 1) / 2 +
                                        size_ * static_cast<int>(j % 3));
        if (data[i][j] != want) {
          throw Error(HVD_ERR_MISMATCH,
                      "step: " + step_.tensors()[i].name + " element " +
                          std::to_string(j) + " on rank " +
                          std::to_string(rank_) + " is " +
                          std::to_string(data[i][j]) + ", expected " +
                          std::to_string(want));
        }
      }
    }
  }

 private:
  hvd_step::TrainingStep step_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
};

bool autotune_settled(const std::string& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line)) last = line;
  return last.find(",settled,") != std::string::npos;
}

}  // namespace

void bench_step(const Options& o, RuntimeLayer& layer,
                const std::string& config_path) {
  hvd::ConfigLoadOptions load;
  load.path = config_path;
  hvd::Config config = hvd::Config::load(load);
  const bool autotune = config.get_bool("runtime.autotune");
  const std::string autotune_log = config.get_string("runtime.autotune_log");
  StepPlan plan = plan_for(o.step);
  StepRunner runner(std::move(plan.tensors), layer.rank(), layer.size(),
                    o.op_timeout);
  runner.verify();

  int warmup = 0;
  for (; warmup < o.warmup; ++warmup) runner.run();
  if (autotune && !autotune_log.empty()) {
    // Rank 0 writes the log: it says when everyone may stop warming up.
    for (; warmup < 3000; ++warmup) {
      bool done = layer.rank() == 0 && autotune_settled(autotune_log);
      if (layer.max_over_ranks({done ? 1.0 : 0.0})[0] > 0) break;
      runner.run();
    }
  }
  layer.barrier();
  std::vector<double> times;
  for (int i = 0; i < o.iters; ++i) times.push_back(runner.run());
  times = layer.max_over_ranks(times);
  const double med = median(times);
  double best = times[0];
  for (double t : times) best = std::min(best, t);
  if (layer.rank() != 0) return;
  const double steps_per_s = 1.0 / med;
  const double gbs = static_cast<double>(runner.bytes()) / med / 1e9;
  const std::string tuning =
      autotune ? (autotune_log.empty()
                      ? "on (no log: not waited for)"
                      : "on, settled after " + std::to_string(warmup) +
                            " warm-up steps")
               : "off";
  if (o.csv) {
    std::printf(
        "step,ranks,tensors,bytes,median_ms,min_ms,steps_per_s,algbw_gbs,"
        "autotune\n%s,%d,%zu,%llu,%.4f,%.4f,%.2f,%.3f,%s\n",
        o.step.c_str(), layer.size(), runner.tensors(),
        static_cast<unsigned long long>(runner.bytes()), med * 1e3, best * 1e3,
        steps_per_s, gbs, autotune ? "on" : "off");
  } else {
    std::printf(
        "horovod-bench: step %s (%s), %d rank(s), %s\n"
        "  config: fusion_threshold %llu B, cycle_time %g ms, cache_capacity "
        "%lld, "
        "timeline %s, autotune %s\n"
        "  step time: median %.3f ms (min %.3f) over %d steps of the slowest "
        "rank; %.1f steps/s; %.3f GB/s of tensors\n",
        o.step.c_str(), plan.description.c_str(), layer.size(),
        layer.describe().c_str(),
        static_cast<unsigned long long>(
            config.get_bytes("runtime.fusion_threshold")),
        std::chrono::duration<double, std::milli>(
            config.get_duration("runtime.cycle_time"))
            .count(),
        static_cast<long long>(config.get_int("runtime.cache_capacity")),
        config.get_string("timeline.path").empty() ? "off" : "on",
        tuning.c_str(), med * 1e3, best * 1e3, o.iters, steps_per_s, gbs);
  }
  std::fflush(stdout);
}

}  // namespace hvd_bench
