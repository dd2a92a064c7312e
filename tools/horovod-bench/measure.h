// One size on one layer: verify, warm up, time.
#pragma once

#include <string>
#include <vector>

#include "layer.h"
#include "options.h"
#include "shape.h"
#include "workload.h"

namespace hvd_bench {

struct Measurement {
  std::string algorithm;  // what ran it
  double median_s = 0;    // of the slowest rank's time per iteration
  double min_s = 0;
  double algbw_gbs = 0;  // bytes / median, 1e9 bytes per second
  double busbw_gbs = 0;
};

// Runs the collective once and checks every rank's result (throwing
// hvd::Error HVD_ERR_MISMATCH naming the ranks with wrong results), then
// `warmup` untimed and `iters` timed runs.
Measurement measure(Layer& layer, const Shape& shape, Workload& workload,
                    const Options& options);

// Median of a non-empty list.
double median(std::vector<double> values);

}  // namespace hvd_bench
