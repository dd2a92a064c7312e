// Nested collectives (hvd_p2p_api.collective): a reducer task that posts
// another collective on its team or a sub-team. The engine gives the
// nested task a context of its own and drives it through test(); which
// reducer runs it is the runtime's business, behind this interface.
#pragma once

#include <string>

#include "horovod/reducer.h"

namespace hvd::p2p {

struct NestedTask {
  const hvd_reducer_api* api = nullptr;
  hvd_task* task = nullptr;
};

class NestedCollectives {
 public:
  virtual ~NestedCollectives() = default;
  // Starts `args` on `context`'s team with the reducer named `reducer`
  // ("": the planner's choice). On failure returns the status and sets
  // `error`; HVD_ERR_UNSUPPORTED when no loaded reducer takes it.
  virtual hvd_status post(hvd_p2p_s* context, const std::string& reducer,
                          const hvd_coll_args& args, NestedTask* out,
                          std::string* error) = 0;
};

}  // namespace hvd::p2p
