#include "runtime/autotune.h"

#include <cerrno>
#include <cstring>
#include <initializer_list>

#include "common/error.h"

namespace hvd::runtime {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
const char* const kStages[] = {"fusion_threshold", "cycle_time", "reducer"};

double milliseconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

std::string TuneSetting::describe() const {
  char text[160];
  std::snprintf(text, sizeof text,
                "fusion_threshold %llu bytes, cycle_time %g ms, reducer %s",
                static_cast<unsigned long long>(fusion_threshold),
                milliseconds(cycle_time),
                reducer.empty() ? "(planner's choice)" : reducer.c_str());
  return text;
}

Autotuner::Autotuner(TuneSetting defaults, std::vector<std::string> reducers,
                     Options options, const std::string& log_path)
    : defaults_(std::move(defaults)),
      reducers_(std::move(reducers)),
      options_(options),
      best_(defaults_),
      current_(defaults_) {
  if (!log_path.empty()) {
    log_ = std::fopen(log_path.c_str(), "w");
    if (!log_) {
      throw Error(HVD_ERR_SYSTEM,
                  "autotune: cannot open the log '" + log_path +
                      "' (runtime.autotune_log): " + std::strerror(errno));
    }
    std::fprintf(log_,
                 "sample,stage,fusion_threshold_bytes,cycle_time_ms,reducer,"
                 "bytes,seconds,bytes_per_second\n");
    std::fflush(log_);
  }
  build_stage();
  warm_left_ = options_.warmup_cycles + 1;
}

Autotuner::~Autotuner() {
  if (log_) std::fclose(log_);
}

void Autotuner::build_stage() {
  candidates_.clear();
  next_ = 0;
  auto add = [&](TuneSetting s) {
    for (const Candidate& c : candidates_) {
      if (c.setting == s) return;
    }
    Candidate c;
    c.setting = std::move(s);
    if (c.setting == best_ && best_score_ >= 0) c.score = best_score_;
    candidates_.push_back(std::move(c));
  };
  TuneSetting s = best_;
  switch (stage_) {
    case 0:
      add(s);
      for (uint64_t t : std::initializer_list<uint64_t>{0, kMiB, 4 * kMiB,
                                                        16 * kMiB, 64 * kMiB}) {
        s.fusion_threshold = t;
        add(s);
      }
      break;
    case 1:
      add(s);
      for (auto t : {std::chrono::nanoseconds(std::chrono::microseconds(250)),
                     std::chrono::nanoseconds(std::chrono::milliseconds(5))}) {
        s.cycle_time = t;
        add(s);
      }
      break;
    default:
      add(s);
      if (reducers_.size() > 1) {
        for (const std::string& name : reducers_) {
          s.reducer = name;
          add(s);
        }
      }
      break;
  }
}

std::optional<TuneSetting> Autotuner::note_cycle(uint64_t bytes,
                                                 Clock::time_point now) {
  if (settled_ || bytes == 0) return std::nullopt;  // idle cycles tell nothing
  if (warm_left_ > 0) {
    if (--warm_left_ == 0) {
      window_start_ = now;
      cycles_ = 0;
      bytes_ = 0;
    }
    return std::nullopt;
  }
  bytes_ += bytes;
  ++cycles_;
  if (cycles_ < options_.sample_cycles ||
      now - window_start_ < options_.min_sample) {
    return std::nullopt;
  }
  double seconds = std::chrono::duration<double>(now - window_start_).count();
  double score = seconds > 0 ? static_cast<double>(bytes_) / seconds : 0;
  log_line(kStages[stage_], current_, bytes_, seconds, score);
  candidates_[next_].score = score;
  if (score > best_score_) {
    best_score_ = score;
    best_ = current_;
  }
  return advance();
}

std::optional<TuneSetting> Autotuner::advance() {
  ++next_;
  while (true) {
    while (next_ < candidates_.size() && candidates_[next_].score >= 0) ++next_;
    if (next_ < candidates_.size()) break;
    if (++stage_ > 2) {
      settled_ = true;
      log_line("settled", best_, 0, 0, best_score_);
      if (best_ == current_) return std::nullopt;
      current_ = best_;
      return current_;
    }
    build_stage();
  }
  current_ = candidates_[next_].setting;
  warm_left_ = options_.warmup_cycles + 1;
  return current_;
}

void Autotuner::log_line(const char* stage, const TuneSetting& s,
                         uint64_t bytes, double seconds, double score) {
  ++sample_;
  if (!log_) return;
  std::fprintf(log_, "%zu,%s,%llu,%g,%s,%llu,%.6f,%.0f\n", sample_, stage,
               static_cast<unsigned long long>(s.fusion_threshold),
               milliseconds(s.cycle_time), s.reducer.c_str(),
               static_cast<unsigned long long>(bytes), seconds, score);
  std::fflush(log_);
}

}  // namespace hvd::runtime
