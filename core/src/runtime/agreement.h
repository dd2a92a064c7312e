// Cross-rank checks of one op: every rank of the set submitted the same name;
// do they agree on what it is? The message names the op, the disagreement
// and which ranks hold which value, e.g.
//   allreduce 'grad/w': ranks disagree on dtype: float32 on ranks 0, 2;
//   int32 on rank 1
#pragma once

#include <string>
#include <vector>

#include "runtime/messages.h"

namespace hvd::runtime {

// `by_rank[r]` is set rank r's request, or null for a rank that has joined
// (it takes no part in the check). Returns "" when they agree.
std::string find_disagreement(const std::vector<const Request*>& by_rank);

std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace hvd::runtime
