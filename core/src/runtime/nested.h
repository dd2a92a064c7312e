// The runtime's side of nested collectives: a reducer task asks, through
// hvd_p2p_api.collective, for another collective on its team or a
// sub-team; this picks the reducer (the one named, or the planner's choice
// for that team and size) from the loaded set and posts it.
#pragma once

#include "p2p/nested_collectives.h"
#include "runtime/reducers.h"

namespace hvd::runtime {

class NestedRunner : public p2p::NestedCollectives {
 public:
  explicit NestedRunner(ReducerSet& reducers) : reducers_(reducers) {}

  hvd_status post(hvd_p2p_s* context, const std::string& reducer,
                  const hvd_coll_args& args, p2p::NestedTask* out,
                  std::string* error) override;

 private:
  ReducerSet& reducers_;
  std::vector<size_t> candidates_;
};

// The bytes of a collective as the planner measures a response: the whole
// buffer reduced or moved (allgather and alltoall: everything received).
uint64_t collective_bytes(const hvd_coll_args& args, int32_t team_size);

}  // namespace hvd::runtime
