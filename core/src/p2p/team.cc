#include "p2p/team.h"

#include <algorithm>
#include <map>
#include <string>

#include "common/error.h"

namespace hvd::p2p {

Team::Team(std::vector<int32_t> world_ranks, int32_t my_world_rank,
           const std::vector<int>& host_of_world, uint64_t epoch,
           int32_t process_set)
    : world_ranks_(std::move(world_ranks)), host_of_world_(host_of_world) {
  int32_t me = -1;
  std::map<int, int32_t> host_index;  // world host -> team host
  host_of_.reserve(world_ranks_.size());
  for (size_t i = 0; i < world_ranks_.size(); ++i) {
    int32_t w = world_ranks_[i];
    if (w < 0 || static_cast<size_t>(w) >= host_of_world_.size()) {
      throw Error(HVD_ERR_INTERNAL, "team of process set " +
                                        std::to_string(process_set) +
                                        ": world rank " + std::to_string(w) +
                                        " is outside the world");
    }
    if (w == my_world_rank) me = static_cast<int32_t>(i);
    auto [it, inserted] = host_index.emplace(
        host_of_world_[w], static_cast<int32_t>(host_index.size()));
    host_of_.push_back(it->second);
  }
  if (me < 0) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "world rank " + std::to_string(my_world_rank) +
                    " is not a member of the team of process set " +
                    std::to_string(process_set));
  }
  int32_t local_rank = 0, local_size = 0;
  for (size_t i = 0; i < host_of_.size(); ++i) {
    if (host_of_[i] != host_of_[me]) continue;
    if (static_cast<int32_t>(i) < me) ++local_rank;
    ++local_size;
  }
  view_.struct_size = sizeof(hvd_team);
  view_.ext = nullptr;
  view_.rank = me;
  view_.size = static_cast<int32_t>(world_ranks_.size());
  view_.world_ranks = world_ranks_.data();
  view_.host_of = host_of_.data();
  view_.host_count = static_cast<int32_t>(host_index.size());
  view_.local_rank = local_rank;
  view_.local_size = local_size;
  view_.epoch = epoch;
  view_.process_set = process_set;
}

std::unique_ptr<Team> Team::subteam(const int32_t* members,
                                    int32_t count) const {
  if (count <= 0 || (members == nullptr)) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "sub-team with no members");
  }
  std::vector<int32_t> world;
  world.reserve(count);
  std::vector<bool> seen(size(), false);
  for (int32_t i = 0; i < count; ++i) {
    int32_t m = members[i];
    if (m < 0 || m >= size()) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "sub-team member " + std::to_string(m) +
                      " is not a rank of a team of " + std::to_string(size()));
    }
    if (seen[m]) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "sub-team member " + std::to_string(m) + " given twice");
    }
    seen[m] = true;
    world.push_back(world_ranks_[m]);
  }
  if (!seen[rank()]) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "sub-team without this process (team rank " +
                    std::to_string(rank()) + ")");
  }
  return std::make_unique<Team>(std::move(world), world_ranks_[rank()],
                                host_of_world_, view_.epoch, view_.process_set);
}

}  // namespace hvd::p2p
