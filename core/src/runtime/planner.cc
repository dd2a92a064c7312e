#include "runtime/planner.h"

#include <algorithm>

namespace hvd::runtime {

int32_t score_for(const ReducerScores& scores, uint64_t bytes) {
  int32_t best = 0;
  for (const hvd_score_range& r : scores.ranges) {
    if (r.min_bytes <= bytes &&
        (bytes < r.max_bytes || r.max_bytes == UINT64_MAX)) {
      best = std::max(best, r.score);
    }
  }
  return best;
}

std::vector<size_t> rank_candidates(const std::vector<ReducerRule>& rules,
                                    const std::vector<ReducerScores>& reducers,
                                    uint64_t bytes) {
  std::vector<size_t> order;
  for (const ReducerRule& rule : rules) {
    if (bytes < rule.min_bytes ||
        (bytes >= rule.max_bytes && rule.max_bytes != UINT64_MAX)) {
      continue;
    }
    for (size_t i = 0; i < reducers.size(); ++i) {
      if (reducers[i].name == rule.reducer && reducers[i].runs_op) {
        order.push_back(i);
        break;
      }
    }
    break;  // the first matching rule decides
  }
  std::vector<std::pair<int32_t, size_t>> scored;
  for (size_t i = 0; i < reducers.size(); ++i) {
    if ((!order.empty() && order[0] == i) || !reducers[i].runs_op) continue;
    int32_t s = score_for(reducers[i], bytes);
    if (s > 0) scored.push_back({s, i});
  }
  std::stable_sort(
      scored.begin(), scored.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [s, i] : scored) order.push_back(i);
  return order;
}

}  // namespace hvd::runtime
