// The table rank 0 prints, row by row as sizes finish: nccl-tests' columns
// as text, or CSV with one header line.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "measure.h"
#include "options.h"
#include "shape.h"

namespace hvd_bench {

class Report {
 public:
  // Prints nothing unless `printing` (rank 0).
  Report(const Options& options, bool printing, std::FILE* out = stdout);

  // Lines about the run ("# ..."); text mode only.
  void header(const std::vector<std::string>& lines);
  void row(const Shape& shape, const Measurement& ours,
           const std::optional<Measurement>& peer);
  // The average bus bandwidth; text mode only.
  void footer();

 private:
  void column_titles();
  std::string peer_columns() const;  // "" or ",mpi_time_us,..."

  const Options& options_;
  bool printing_;
  std::FILE* out_;
  bool titled_ = false;
  double busbw_sum_ = 0, peer_busbw_sum_ = 0;
  int rows_ = 0;
};

}  // namespace hvd_bench
