// `--sweep`: the times of every reducer at every size, and what they say:
// the fastest reducer per size range, the crossover points, and the
// [[<collective>.rules]] that would pick the fastest everywhere.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace hvd_bench {

class Sweep {
 public:
  void add(uint64_t bytes, const std::string& reducer, double median_s);

  struct Range {
    uint64_t min_bytes = 0;  // the first size measured in it
    uint64_t max_bytes = 0;  // the first size after it (0: no limit)
    std::string reducer;
  };
  // The fastest reducer by median time per size, in size order, runs of
  // equal winners merged. A reducer within kTie of the fastest at a size
  // counts as tied with it, and a tie keeps the reducer of the sizes below,
  // so noise does not make crossovers.
  static constexpr double kTie = 0.10;
  std::vector<Range> winners() const;

  // "# ..." lines: winners, crossover points, and the rules as TOML.
  void print(const char* collective, std::FILE* out) const;

 private:
  struct Point {
    uint64_t bytes;
    std::string reducer;
    double median_s;
  };
  std::vector<Point> points_;
};

// "64 KiB", "4 B", "1 MiB".
std::string size_text(uint64_t bytes);
// "64KiB" (TOML size text).
std::string toml_size(uint64_t bytes);

}  // namespace hvd_bench
