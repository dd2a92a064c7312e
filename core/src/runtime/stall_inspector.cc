#include "runtime/stall_inspector.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace hvd::runtime {
namespace {

std::string seconds_text(std::chrono::nanoseconds d) {
  double s = std::chrono::duration<double>(d).count();
  char text[32];
  snprintf(text, sizeof text, s < 10 ? "%.1f s" : "%.0f s", s);
  return text;
}

// At most this many ops are named for one rank's whereabouts.
constexpr size_t kWhereaboutsShown = 3;

}  // namespace

StallInspector::StallInspector(std::chrono::nanoseconds warning_time,
                               std::chrono::nanoseconds shutdown_time)
    : warning_time_(warning_time), shutdown_time_(shutdown_time) {
  auto shortest = warning_time_;
  if (shutdown_time_.count() > 0) shortest = std::min(shortest, shutdown_time_);
  check_interval_ = std::clamp<std::chrono::nanoseconds>(
      shortest / 4, std::chrono::milliseconds(10), std::chrono::seconds(1));
}

StallInspector::Waiting& StallInspector::note(
    int32_t id, const std::vector<int32_t>& world_ranks,
    const std::string& name, Clock::time_point now) {
  Set& set = sets_[id];
  if (set.world_ranks.size() != world_ranks.size()) {
    set.world_ranks = world_ranks;
  }
  auto [it, inserted] = set.waiting.try_emplace(name);
  if (inserted) {
    it->second.first = now;
    it->second.present.assign(world_ranks.size(), false);
  }
  return it->second;
}

void StallInspector::submitted(int32_t id,
                               const std::vector<int32_t>& world_ranks,
                               const std::string& name, int32_t set_rank,
                               Clock::time_point now, const std::string& call) {
  Waiting& w = note(id, world_ranks, name, now);
  if (w.call.empty()) w.call = call;
  if (set_rank >= 0 && static_cast<size_t>(set_rank) < w.present.size()) {
    w.present[set_rank] = true;
  }
}

void StallInspector::joined(int32_t id, const std::vector<int32_t>& world_ranks,
                            int32_t set_rank, Clock::time_point now) {
  submitted(id, world_ranks, kJoinKey, set_rank, now, "join");
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

std::string StallInspector::op_text(int32_t id, const std::string& name,
                                    const Waiting& w) {
  std::string text = w.call;
  if (name != kJoinKey) text += (text.empty() ? "'" : " '") + name + "'";
  if (id != 0) text += " (process set " + std::to_string(id) + ")";
  return text;
}

std::string StallInspector::whereabouts(int32_t world) const {
  // Sorted, so the report reads the same on every run.
  std::set<std::string> ops;
  for (const auto& [id, set] : sets_) {
    for (size_t k = 0; k < set.world_ranks.size(); ++k) {
      if (set.world_ranks[k] != world) continue;
      for (const auto& [name, w] : set.waiting) {
        if (k < w.present.size() && w.present[k]) {
          ops.insert(op_text(id, name, w));
        }
      }
    }
  }
  std::string text = "rank " + std::to_string(world);
  if (ops.empty()) {
    return text +
           " has submitted nothing that waits (still computing, "
           "finished, or failed)";
  }
  text += " waits in ";
  size_t shown = 0;
  for (const std::string& op : ops) {
    if (shown == kWhereaboutsShown) {
      text += " and " + std::to_string(ops.size() - shown) + " more";
      break;
    }
    text += (shown++ ? ", " : "") + op;
  }
  return text;
}

std::string StallInspector::describe(int32_t id, const Set& set,
                                     const std::string& name, const Waiting& w,
                                     Clock::time_point now) const {
  const Waiting* joins = nullptr;
  if (name != kJoinKey) {
    auto it = set.waiting.find(kJoinKey);
    if (it != set.waiting.end()) joins = &it->second;
  }
  auto world = [&](size_t k) {
    return k < set.world_ranks.size() ? set.world_ranks[k]
                                      : static_cast<int32_t>(k);
  };
  std::string missing, ready, joined;
  std::vector<int32_t> missing_ranks;
  for (size_t k = 0; k < w.present.size(); ++k) {
    const bool has_joined =
        joins && k < joins->present.size() && joins->present[k];
    std::string& list = w.present[k] ? ready : has_joined ? joined : missing;
    list += (list.empty() ? "" : ", ") + std::to_string(world(k));
    if (!w.present[k] && !has_joined) missing_ranks.push_back(world(k));
  }
  std::string text = op_text(id, name, w) + ": missing ranks " + missing +
                     " (" + (name == kJoinKey ? "joined" : "submitted") +
                     " by ranks " + ready;
  if (!joined.empty()) text += "; joined: ranks " + joined;
  text += ", waiting " + seconds_text(now - w.first) + ")";
  for (int32_t r : missing_ranks) text += "; " + whereabouts(r);
  return text;
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
        " (stall_check.shutdown_time): one or more ops were submitted by "
        "only a subset of ranks:";
    for (const auto& [key, line] : fatal) verdict.shutdown += "\n  " + line;
    // The ops that wait less long yet: where the other ranks are.
    bool first = true;
    for (const auto& [key, line] : stalled) {
      if (fatal.count(key)) continue;
      if (first) verdict.shutdown += "\nalso waiting:";
      first = false;
      verdict.shutdown += "\n  " + line;
    }
    return verdict;
  }
  if (stalled.empty() || (warned_ && now - last_warning_ < warning_time_)) {
    return verdict;
  }
  warned_ = true;
  last_warning_ = now;
  verdict.warning =
      "stall inspector: one or more ops (collectives, barriers, joins, "
      "process set changes) were submitted by a subset of ranks and have "
      "waited for the remaining ranks for more than " +
      seconds_text(warning_time_) +
      " (stall_check.warning_time). This may indicate that different ranks "
      "are in different calls, or that a rank failed or finished early, "
      "which will cause deadlock.";
  if (shutdown_time_.count() > 0) {
    verdict.warning += " The job stops once one has waited " +
                       seconds_text(shutdown_time_) +
                       " (stall_check.shutdown_time).";
  }
  for (const auto& [key, line] : stalled) verdict.warning += "\n  " + line;
  return verdict;
}

}  // namespace hvd::runtime
