// `horovod-info --plan`: which reducer runs each collective, by message
// size, for a team size and host layout, from the reducers reducer.load
// names (loaded and asked for their scores, as the runtime does), the
// [[<collective>.rules]] and runtime.hierarchical_*. The choice is the
// runtime's own (ReducerSet::candidates, planner.h), for the team of the
// global process set as rank 0 sees it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"

namespace hvd::info {

// Members per host, in rank order (ranks of a host are consecutive, as
// horovodrun places them). Throws hvd::Error HVD_ERR_INVALID_ARGUMENT when
// the layout is empty or a host has no member.
struct PlanLayout {
  std::vector<int32_t> per_host;
  int32_t size() const;
};

// `size` ranks over `hosts` hosts, as evenly as possible (the first
// size % hosts hosts get one more).
PlanLayout even_layout(int32_t size, int32_t hosts);
// "2,2,4" -> {2, 2, 4}; throws HVD_ERR_INVALID_ARGUMENT on bad text.
PlanLayout parse_layout(const std::string& text);

// One row: messages of [min_bytes, max_bytes) go to `order[0]`, falling
// through to the rest on HVD_ERR_UNSUPPORTED.
struct PlanRow {
  uint64_t min_bytes = 0, max_bytes = UINT64_MAX;
  std::vector<std::string> order;
  std::vector<int32_t> scores;  // per entry of order
  std::string rule;  // the rule that put order[0] first ("" for scores)
};

struct PlanTable {
  std::string collective;
  std::vector<PlanRow> rows;
};

struct Plan {
  PlanLayout layout;
  std::string reducers;  // "ring, tree"
  std::vector<PlanTable> tables;
};

// Throws hvd::Error when a reducer does not load or a rule names one that
// is not loaded.
Plan build_plan(const Config& config, const PlanLayout& layout);
void print_plan_text(const Plan& plan, std::ostream& out);

}  // namespace hvd::info
