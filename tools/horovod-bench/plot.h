// `--plot FILE.png`: rank 0 keeps every timed row (size, series, time, bus
// bandwidth) in a CSV next to the plot (FILE.csv), then runs
// horovod-bench-plot (installed next to horovod-bench; HOROVOD_BENCH_PLOT
// names another) to draw bus bandwidth against size, one line per series.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace hvd_bench {

class Plot {
 public:
  // Opens FILE.csv (FILE without its .png); throws hvd::Error when it
  // cannot.
  Plot(const std::string& png_path, const std::string& title);
  ~Plot();
  Plot(const Plot&) = delete;
  Plot& operator=(const Plot&) = delete;

  void add(uint64_t bytes, const std::string& series, double median_s,
           double busbw_gbs);
  // Closes the CSV and draws; throws hvd::Error naming the script and its
  // exit status when it fails.
  void draw();

 private:
  std::string png_, csv_, title_;
  std::FILE* out_ = nullptr;
};

}  // namespace hvd_bench
