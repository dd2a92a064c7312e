#include "report.h"

namespace hvd_bench {

Report::Report(const Options& options, bool printing, std::FILE* out)
    : options_(options), printing_(printing), out_(out) {}

void Report::header(const std::vector<std::string>& lines) {
  if (!printing_ || options_.csv) return;
  for (const std::string& line : lines)
    std::fprintf(out_, "# %s\n", line.c_str());
  std::fprintf(out_, "#\n");
  std::fflush(out_);
}

std::string Report::peer_columns() const {
  if (options_.peer.empty()) return "";
  const std::string& p = options_.peer;
  return "," + p + "_time_us," + p + "_min_us," + p + "_algbw_gbs," + p +
         "_busbw_gbs,bw_ratio";
}

void Report::column_titles() {
  titled_ = true;
  if (options_.csv) {
    std::fprintf(
        out_,
        "collective,dtype,ranks,layer,bytes,count,reducer,time_us,min_us,"
        "algbw_gbs,busbw_gbs%s\n",
        peer_columns().c_str());
    return;
  }
  std::fprintf(out_, "# %10s %11s %8s %10s %11s %11s %7s %7s", "size", "count",
               "type", "reducer", "time(us)", "min(us)", "algbw", "busbw");
  if (!options_.peer.empty()) {
    std::fprintf(out_, " | %11s %11s %7s %7s %8s",
                 (options_.peer + "(us)").c_str(), "min(us)", "algbw", "busbw",
                 ("ours/" + options_.peer).c_str());
  }
  std::fprintf(out_, "\n# %10s %11s %8s %10s %11s %11s %7s %7s", "(B)",
               "(elements)", "", "", "", "", "(GB/s)", "(GB/s)");
  if (!options_.peer.empty()) {
    std::fprintf(out_, " | %11s %11s %7s %7s %8s", "", "", "(GB/s)", "(GB/s)",
                 "(busbw)");
  }
  std::fprintf(out_, "\n");
}

void Report::row(const Shape& shape, const Measurement& ours,
                 const std::optional<Measurement>& peer) {
  if (!printing_) return;
  if (!titled_) column_titles();
  busbw_sum_ += ours.busbw_gbs;
  if (peer) peer_busbw_sum_ += peer->busbw_gbs;
  ++rows_;
  const double ratio =
      peer && peer->busbw_gbs > 0 ? ours.busbw_gbs / peer->busbw_gbs : 0;
  if (options_.csv) {
    std::fprintf(out_, "%s,%s,%d,%s,%llu,%zu,%s,%.3f,%.3f,%.6g,%.6g",
                 collective_name(shape.collective), dtype_label(shape.dtype),
                 shape.ranks, layer_name(options_.layer),
                 static_cast<unsigned long long>(shape.bytes()), shape.count,
                 ours.algorithm.c_str(), ours.median_s * 1e6, ours.min_s * 1e6,
                 ours.algbw_gbs, ours.busbw_gbs);
    if (peer) {
      std::fprintf(out_, ",%.3f,%.3f,%.6g,%.6g,%.6g", peer->median_s * 1e6,
                   peer->min_s * 1e6, peer->algbw_gbs, peer->busbw_gbs, ratio);
    }
    std::fprintf(out_, "\n");
  } else {
    std::fprintf(out_, "  %10llu %11zu %8s %10s %11.2f %11.2f %7.2f %7.2f",
                 static_cast<unsigned long long>(shape.bytes()), shape.count,
                 dtype_label(shape.dtype), ours.algorithm.c_str(),
                 ours.median_s * 1e6, ours.min_s * 1e6, ours.algbw_gbs,
                 ours.busbw_gbs);
    if (peer) {
      std::fprintf(out_, " | %11.2f %11.2f %7.2f %7.2f %8.2f",
                   peer->median_s * 1e6, peer->min_s * 1e6, peer->algbw_gbs,
                   peer->busbw_gbs, ratio);
    }
    std::fprintf(out_, "\n");
  }
  std::fflush(out_);
}

void Report::footer() {
  if (!printing_ || options_.csv || rows_ == 0) return;
  std::fprintf(out_, "# Avg bus bandwidth    : %.4f GB/s\n",
               busbw_sum_ / rows_);
  if (!options_.peer.empty()) {
    std::fprintf(out_, "# Avg bus bandwidth %s: %.4f GB/s\n",
                 options_.peer.c_str(), peer_busbw_sum_ / rows_);
  }
  std::fflush(out_);
}

}  // namespace hvd_bench
