// How the members of a team agree on an NCCL unique id through the host's
// bootstrap store: team rank 0 makes one and publishes it; every other
// member polls for it without blocking (so comm_create can answer
// HVD_AGAIN), reading it from rank 0's entry. The key names the process
// set, the world epoch and how many communicators this process set had, so
// a rebuilt or a second communicator never picks up an old id.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "horovod/host.h"

namespace hvd_nccl {

constexpr size_t kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

class UniqueIdExchange {
 public:
  using Generate = std::function<std::vector<char>()>;

  // `world_rank0` is the world rank of the team's rank 0.
  UniqueIdExchange(const hvd_host* host, int32_t team_rank, int32_t world_rank0,
                   std::string key, Generate generate);

  // HVD_OK once the id is known (id()), HVD_AGAIN while rank 0 has not
  // published it yet; a failure of the store otherwise (throws a Failure).
  hvd_status step();
  const std::vector<char>& id() const { return id_; }
  const std::string& key() const { return key_; }

  // "nccl.<process set>.<epoch>.<n>".
  static std::string key_for(int32_t process_set, uint64_t epoch, uint32_t n);

 private:
  const hvd_host* host_;
  int32_t team_rank_;
  int32_t world_rank0_;
  std::string key_;
  Generate generate_;
  std::vector<char> id_;
};

}  // namespace hvd_nccl
