#include "measure.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/error.h"

namespace hvd_bench {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Measurement measure(Layer& layer, const Shape& shape, Workload& workload,
                    const Options& options) {
  const int rank = layer.rank();
  const std::string what = std::string(collective_name(shape.collective)) +
                           " of " + std::to_string(shape.bytes()) + " bytes (" +
                           std::to_string(shape.count) + " " +
                           dtype_label(shape.dtype) + ")";
  workload.fill(shape, rank);
  layer.prepare(shape, workload);
  layer.run_once();
  std::string problem = workload.check(shape, rank);
  std::vector<double> wrong(static_cast<size_t>(layer.size()), 0.0);
  if (!problem.empty()) {
    wrong[static_cast<size_t>(rank)] = 1;
    std::fprintf(stderr,
                 "horovod-bench: rank %d: %s with %s: wrong result: %s\n", rank,
                 what.c_str(), layer.algorithm().c_str(), problem.c_str());
  }
  wrong = layer.max_over_ranks(wrong);
  std::string ranks;
  for (size_t r = 0; r < wrong.size(); ++r) {
    if (wrong[r] != 0) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!ranks.empty()) {
    throw hvd::Error(HVD_ERR_MISMATCH,
                     what + " with " + layer.algorithm() +
                         " gave wrong results on rank(s) " + ranks +
                         (problem.empty() ? "" : ": " + problem));
  }

  for (int i = 0; i < options.warmup; ++i) layer.run_once();
  layer.barrier();
  std::vector<double> times(static_cast<size_t>(options.iters));
  for (double& t : times) {
    auto start = std::chrono::steady_clock::now();
    layer.run_once();
    t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }
  times = layer.max_over_ranks(times);

  Measurement m;
  m.algorithm = layer.algorithm();
  m.median_s = median(times);
  m.min_s = *std::min_element(times.begin(), times.end());
  m.algbw_gbs = m.median_s > 0
                    ? static_cast<double>(shape.bytes()) / m.median_s / 1e9
                    : 0;
  m.busbw_gbs = m.algbw_gbs * bus_factor(shape.collective, layer.size());
  return m;
}

}  // namespace hvd_bench
