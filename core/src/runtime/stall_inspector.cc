#include "runtime/stall_inspector.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace hvd::runtime {
namespace {

std::string seconds_text(std::chrono::nanoseconds d) {
  double s = std::chrono::duration<double>(d).count();
  char text[32];
  snprintf(text, sizeof text, s < 10 ? "%.1f s" : "%.0f s", s);
  return text;
}

}  // namespace

StallInspector::StallInspector(std::chrono::nanoseconds warning_time,
                               std::chrono::nanoseconds shutdown_time)
    : warning_time_(warning_time), shutdown_time_(shutdown_time) {
  auto shortest = warning_time_;
  if (shutdown_time_.count() > 0) shortest = std::min(shortest, shutdown_time_);
  check_interval_ = std::clamp<std::chrono::nanoseconds>(
      shortest / 4, std::chrono::milliseconds(10), std::chrono::seconds(1));
}

void StallInspector::submitted(int32_t id,
                               const std::vector<int32_t>& world_ranks,
                               const std::string& name, int32_t set_rank,
                               Clock::time_point now) {
  Set& set = sets_[id];
  if (set.world_ranks.size() != world_ranks.size()) {
    set.world_ranks = world_ranks;
  }
  auto [it, inserted] = set.waiting.try_emplace(name);
  if (inserted) {
    it->second.first = now;
    it->second.present.assign(world_ranks.size(), false);
  }
  if (set_rank >= 0 &&
      static_cast<size_t>(set_rank) < it->second.present.size()) {
    it->second.present[set_rank] = true;
  }
}

void StallInspector::resolved(int32_t id, const std::string& name) {
  auto it = sets_.find(id);
  if (it != sets_.end()) it->second.waiting.erase(name);
}

size_t StallInspector::pending() const {
  size_t n = 0;
  for (const auto& [id, set] : sets_) n += set.waiting.size();
  return n;
}

std::string StallInspector::describe(int32_t id, const Set& set,
                                     const std::string& name, const Waiting& w,
                                     Clock::time_point now) const {
  std::string missing, ready;
  for (size_t k = 0; k < w.present.size(); ++k) {
    std::string& list = w.present[k] ? ready : missing;
    list += (list.empty() ? "" : ", ") +
            std::to_string(k < set.world_ranks.size() ? set.world_ranks[k]
                                                      : static_cast<int>(k));
  }
  std::string text = "'" + name + "'";
  if (id != 0) text += " (process set " + std::to_string(id) + ")";
  return text + ": missing ranks " + missing + " (submitted by ranks " + ready +
         ", waiting " + seconds_text(now - w.first) + ")";
}

StallInspector::Verdict StallInspector::check(Clock::time_point now) {
  Verdict verdict;
  if (now < next_check_) return verdict;
  next_check_ = now + check_interval_;
  // Sorted, so the report reads the same on every run.
  std::map<std::pair<int32_t, std::string>, std::string> stalled, fatal;
  for (const auto& [id, set] : sets_) {
    for (const auto& [name, w] : set.waiting) {
      auto waited = now - w.first;
      if (waited < warning_time_) continue;
      std::string line = describe(id, set, name, w, now);
      if (shutdown_time_.count() > 0 && waited >= shutdown_time_) {
        fatal.emplace(std::make_pair(id, name), line);
      }
      stalled.emplace(std::make_pair(id, name), std::move(line));
    }
  }
  if (!fatal.empty()) {
    verdict.shutdown =
        "stall inspector: shutting down after " + seconds_text(shutdown_time_) +
        " (stall_check.shutdown_time): one or more tensors were submitted "
        "by only a subset of ranks:";
    for (const auto& [key, line] : fatal) verdict.shutdown += "\n  " + line;
    return verdict;
  }
  if (stalled.empty() || (warned_ && now - last_warning_ < warning_time_)) {
    return verdict;
  }
  warned_ = true;
  last_warning_ = now;
  verdict.warning =
      "stall inspector: one or more tensors were submitted to be reduced, "
      "gathered or broadcast by a subset of ranks and have waited for the "
      "remaining ranks for more than " +
      seconds_text(warning_time_) +
      " (stall_check.warning_time). This may indicate that different ranks "
      "are trying to submit different tensors or that only a subset of ranks "
      "is submitting tensors, which will cause deadlock.";
  for (const auto& [key, line] : stalled) verdict.warning += "\n  " + line;
  return verdict;
}

}  // namespace hvd::runtime
