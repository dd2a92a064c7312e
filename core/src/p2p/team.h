// A team as reducers see it (hvd_team): the members' world ranks and host
// indices, owned here so the C view's arrays stay valid while the team lives.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "horovod/abi.h"

namespace hvd::p2p {

class Team {
 public:
  // `world_ranks` in team order; `host_of_world` maps every world rank to
  // its host (Bootstrap::layout().host_of). Hosts are renumbered in order of
  // their first member. Throws hvd::Error if `my_world_rank` is no member.
  Team(std::vector<int32_t> world_ranks, int32_t my_world_rank,
       const std::vector<int>& host_of_world, uint64_t epoch,
       int32_t process_set);
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  // The sub-team of `members` (ranks in this team, in their new order).
  // Throws hvd::Error HVD_ERR_INVALID_ARGUMENT when a member is out of
  // range or repeated, or this process is not among them.
  std::unique_ptr<Team> subteam(const int32_t* members, int32_t count) const;

  const hvd_team* view() const { return &view_; }
  int32_t rank() const { return view_.rank; }
  int32_t size() const { return view_.size; }
  int32_t world_rank(int32_t team_rank) const {
    return world_ranks_[team_rank];
  }
  const std::vector<int32_t>& world_ranks() const { return world_ranks_; }

 private:
  std::vector<int32_t> world_ranks_;
  std::vector<int32_t> host_of_;    // team rank -> team host index
  std::vector<int> host_of_world_;  // kept for sub-teams
  hvd_team view_{};
};

}  // namespace hvd::p2p
