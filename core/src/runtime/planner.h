// Reducer selection: for a message of `bytes`, the first [[<collective>.rules]]
// rule whose [min_bytes, max_bytes) holds it names the first candidate; the
// other reducers follow by their score for that size (highest first, ties
// in reducer.load order; a score of 0 means "not offered"). A post that
// answers HVD_ERR_UNSUPPORTED falls through to the next candidate. Pure
// logic; the loaded reducers live in reducers.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "horovod/reducer.h"

namespace hvd::runtime {

struct ReducerScores {
  std::string name;
  std::vector<hvd_score_range> ranges;
  // False where the reducer does not run the op (or dtype) at all: then it
  // is no candidate, not even when a rule names it.
  bool runs_op = true;
};

// The score of `scores` for a message of `bytes` (0 when no range holds it;
// the highest when several do).
int32_t score_for(const ReducerScores& scores, uint64_t bytes);

// Indices into `reducers`, best first (those that run the op only).
std::vector<size_t> rank_candidates(const std::vector<ReducerRule>& rules,
                                    const std::vector<ReducerScores>& reducers,
                                    uint64_t bytes);

}  // namespace hvd::runtime
