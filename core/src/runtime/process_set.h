// One process set as the background thread keeps it: its members, its team
// (when this process is a member), the coordinator's bookkeeping (on world
// rank 0), the sequence of its data responses (part of every tag), and the
// ops this rank holds in it: owned by its table from enqueue to completion,
// and those in negotiation viewed by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "p2p/team.h"
#include "runtime/coordinator.h"
#include "runtime/op_table.h"
#include "runtime/pending_op.h"

namespace hvd::runtime {

struct ProcessSet {
  ProcessSet(int32_t id, std::vector<int32_t> world_ranks,
             int32_t my_world_rank, const std::vector<int>& host_of_world,
             uint64_t epoch, bool coordinator);

  int32_t id;
  std::vector<int32_t> world_ranks;    // set rank -> world rank
  std::vector<int32_t> rank_of_world;  // world rank -> set rank or -1
  int32_t rank = -1;                   // this process's; -1: not a member
  std::unique_ptr<p2p::Team> team;     // members only
  // The team as the set's rank 0 sees it: every rank asks the reducers'
  // scores about this one, so all rank the candidates alike.
  std::unique_ptr<p2p::Team> planning_team;
  std::unique_ptr<Coordinator> coordinator;  // world rank 0 only

  uint64_t sequence = 0;  // data responses run so far
  uint64_t unnamed = 0;   // names barriers and joins given no name
  OpTable ops;            // every op of this set on this rank, owned
  // Views into `ops` (not owning): the ops in negotiation by name, and
  // this rank's join in flight.
  std::unordered_map<std::string, PendingOp*> negotiating;
  PendingOp* join = nullptr;

  int32_t size() const { return static_cast<int32_t>(world_ranks.size()); }
  bool member() const { return rank >= 0; }
};

}  // namespace hvd::runtime
