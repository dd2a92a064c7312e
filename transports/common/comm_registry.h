// The communicators of a transport's collectives extension: those being
// built by comm_create (one per team, until it reports ready or failed) and
// the live ones, which an abort from any thread must reach.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"

namespace hvd_transport_common {

template <typename Comm>
class CommRegistry {
 public:
  CommRegistry() = default;
  CommRegistry(const CommRegistry&) = delete;
  CommRegistry& operator=(const CommRegistry&) = delete;

  // Core thread. The communicator being built for `team`; on the first
  // call for it, `make(n)` builds it (`n` counts the communicators made
  // for the team's process set, so their bootstrap keys differ). Fails
  // (HVD_ERR_INVALID_ARGUMENT, named after `plugin`) for a malformed team.
  template <typename Make>
  Comm* pending(const hvd_team& team, const char* plugin, Make&& make) {
    for (Comm* c : pending_) {
      if (c->same_team(team)) return c;
    }
    if (team.size < 1 || team.rank < 0 || team.rank >= team.size ||
        team.world_ranks == nullptr) {
      hvd_plugin::fail(HVD_ERR_INVALID_ARGUMENT,
                       std::string(plugin) + ": comm_create: not a team");
    }
    uint32_t& made = per_set_[team.process_set];
    Comm* c = make(made);
    ++made;
    pending_.push_back(c);
    return c;
  }
  // Core thread: `comm` is ready or failed; the caller owns it now.
  void forget_pending(Comm* comm) {
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (pending_[i] == comm) {
        pending_.erase(pending_.begin() + static_cast<long>(i));
        return;
      }
    }
  }

  // Core thread: deletes the communicators still being built. The owner
  // calls it while what they use (its device, its wait fd) still exists.
  void destroy_pending() {
    std::vector<Comm*> pending;
    pending.swap(pending_);
    for (Comm* c : pending) delete c;
  }

  // A communicator's constructor and destructor (any thread).
  void add(Comm* comm) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(comm);
  }
  void remove(Comm* comm) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(comm);
  }

  // Any thread: f(comm) for every live communicator, under the lock that
  // add and remove take (so none is destroyed meanwhile).
  template <typename F>
  void for_each_live(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    for (Comm* c : live_) f(c);
  }

 private:
  std::vector<Comm*> pending_;           // core thread only
  std::map<int32_t, uint32_t> per_set_;  // core thread only
  std::mutex mu_;                        // live_
  std::unordered_set<Comm*> live_;
};

}  // namespace hvd_transport_common
