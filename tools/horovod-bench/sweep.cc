#include "sweep.h"

#include <algorithm>
#include <map>

namespace hvd_bench {

std::string size_text(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + units[unit];
}

std::string toml_size(uint64_t bytes) {
  std::string text = size_text(bytes);
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  return text;
}

void Sweep::add(uint64_t bytes, const std::string& reducer, double median_s) {
  points_.push_back({bytes, reducer, median_s});
}

std::vector<Sweep::Range> Sweep::winners() const {
  std::map<uint64_t, std::vector<const Point*>> by_size;
  for (const Point& p : points_) by_size[p.bytes].push_back(&p);
  std::vector<Range> ranges;
  for (const auto& [bytes, points] : by_size) {
    const Point* best = points.front();
    for (const Point* p : points) {
      if (p->median_s < best->median_s) best = p;
    }
    if (!ranges.empty()) {
      const std::string& current = ranges.back().reducer;
      bool tied = false;
      for (const Point* p : points) {
        tied = tied || (p->reducer == current &&
                        p->median_s <= best->median_s * (1.0 + kTie));
      }
      if (tied) continue;
      ranges.back().max_bytes = bytes;
    }
    ranges.push_back({bytes, 0, best->reducer});
  }
  return ranges;
}

void Sweep::print(const char* collective, std::FILE* out) const {
  const std::vector<Range> ranges = winners();
  if (ranges.empty()) return;
  std::fprintf(out,
               "# sweep: the fastest reducer (median time) per size; within "
               "%.0f%% of the fastest is a tie, kept by the reducer below\n",
               kTie * 100);
  for (const Range& r : ranges) {
    std::fprintf(out, "#   from %-10s %s\n", size_text(r.min_bytes).c_str(),
                 r.reducer.c_str());
  }
  std::string crossings;
  for (size_t i = 1; i < ranges.size(); ++i) {
    crossings += (crossings.empty() ? "" : ", ") + ranges[i - 1].reducer +
                 " -> " + ranges[i].reducer + " at " +
                 size_text(ranges[i].min_bytes);
  }
  std::fprintf(out, "# crossover points: %s\n",
               crossings.empty() ? "none (one reducer wins every size)"
                                 : crossings.c_str());
  std::fprintf(out, "# rules that pick the fastest (horovod.toml):\n");
  for (const Range& r : ranges) {
    std::fprintf(out, "#   [[%s.rules]]\n", collective);
    if (&r != &ranges.front()) {
      std::fprintf(out, "#   min_bytes = \"%s\"\n",
                   toml_size(r.min_bytes).c_str());
    }
    if (r.max_bytes) {
      std::fprintf(out, "#   max_bytes = \"%s\"\n",
                   toml_size(r.max_bytes).c_str());
    }
    std::fprintf(out, "#   reducer = \"%s\"\n", r.reducer.c_str());
  }
  std::fflush(out);
}

}  // namespace hvd_bench
