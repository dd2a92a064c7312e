// The autotuner ([runtime] autotune, HOROVOD_AUTOTUNE=1), on world rank 0
// beside the coordinator: over the first steps of a job it tries fusion
// thresholds, then cycle times with the best threshold, then each reducer
// with the best of both, scoring each setting by the bytes negotiated per
// second over a sample of cycles that carried data; then it settles on the
// best setting seen (the defaults are the first candidate, so it never
// settles on anything slower than they measured). The coordinator
// broadcasts each switch in the response list, so every rank changes at
// the same cycle. Every sample is a CSV line of [runtime] autotune_log
// (HOROVOD_AUTOTUNE_LOG), and the last line is the setting it settled on.
// Pure logic apart from the log file; the time is passed in.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace hvd::runtime {

struct TuneSetting {
  uint64_t fusion_threshold = 0;
  std::chrono::nanoseconds cycle_time{};
  std::string reducer;  // "" : the planner's choice

  bool operator==(const TuneSetting&) const = default;
  std::string describe() const;
};

class Autotuner {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    int warmup_cycles = 3;   // data cycles skipped after each switch
    int sample_cycles = 10;  // data cycles per sample, at least
    std::chrono::nanoseconds min_sample = std::chrono::milliseconds(20);
  };

  // `reducers`: the loaded reducers' names, tried in the last stage.
  // Throws hvd::Error when the log file cannot be opened.
  Autotuner(TuneSetting defaults, std::vector<std::string> reducers,
            Options options, const std::string& log_path);
  ~Autotuner();
  Autotuner(const Autotuner&) = delete;
  Autotuner& operator=(const Autotuner&) = delete;

  // Once a cycle, with the bytes of the data responses negotiated in it.
  // Returns the setting to switch to from the next cycle, when it changes.
  std::optional<TuneSetting> note_cycle(uint64_t bytes, Clock::time_point now);

  bool settled() const { return settled_; }
  const TuneSetting& current() const { return current_; }
  size_t samples() const { return sample_; }

 private:
  struct Candidate {
    TuneSetting setting;
    double score = -1;  // bytes per second; < 0: not measured
  };
  void build_stage();
  std::optional<TuneSetting> advance();
  void log_line(const char* stage, const TuneSetting& s, uint64_t bytes,
                double seconds, double score);

  TuneSetting defaults_;
  std::vector<std::string> reducers_;
  Options options_;
  FILE* log_ = nullptr;

  int stage_ = 0;  // 0 thresholds, 1 cycle times, 2 reducers
  std::vector<Candidate> candidates_;
  size_t next_ = 0;  // the candidate being measured
  TuneSetting best_;
  double best_score_ = -1;
  TuneSetting current_;
  bool settled_ = false;

  int warm_left_ = 0;
  int cycles_ = 0;
  uint64_t bytes_ = 0;
  Clock::time_point window_start_{};
  size_t sample_ = 0;
};

}  // namespace hvd::runtime
