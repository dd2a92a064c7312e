#include "runtime/process_set.h"

#include "common/error.h"

namespace hvd::runtime {

ProcessSet::ProcessSet(int32_t id_, std::vector<int32_t> ranks,
                       int32_t my_world_rank,
                       const std::vector<int>& host_of_world, uint64_t epoch,
                       bool is_coordinator)
    : id(id_), world_ranks(std::move(ranks)), ops(id_) {
  rank_of_world.assign(host_of_world.size(), -1);
  for (size_t i = 0; i < world_ranks.size(); ++i) {
    int32_t w = world_ranks[i];
    if (w < 0 || static_cast<size_t>(w) >= host_of_world.size() ||
        rank_of_world[w] >= 0) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "process set " + std::to_string(id) + ": rank " +
                      std::to_string(w) +
                      (w >= 0 && static_cast<size_t>(w) < host_of_world.size()
                           ? " is listed twice"
                           : " is not a rank of the world"));
    }
    rank_of_world[w] = static_cast<int32_t>(i);
  }
  if (world_ranks.empty()) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "process set " + std::to_string(id) + " has no ranks");
  }
  rank = rank_of_world[my_world_rank];
  if (member()) {
    team = std::make_unique<p2p::Team>(world_ranks, my_world_rank,
                                       host_of_world, epoch, id);
  }
  planning_team = std::make_unique<p2p::Team>(world_ranks, world_ranks[0],
                                              host_of_world, epoch, id);
  if (is_coordinator) coordinator = std::make_unique<Coordinator>(id, size());
}

}  // namespace hvd::runtime
