// The registry of process sets: set 0 (the world), the sets given at init
// and those added since, and the removed ones the executor may still hold
// responses of or ops in; with them, the ops this rank holds before
// negotiation ends (each set's table owns its ops; the two queues of ops
// not yet offered hold them without owning them).
//
// The progress lock's holder reads and writes it; other threads read it
// through the calls marked "any thread", under its mutex, which the
// holder takes to write.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/pending_op.h"
#include "runtime/process_set.h"

namespace hvd::runtime {

// "[0, 2, 3]", for messages.
std::string describe_ranks(const std::vector<int32_t>& ranks);

class ProcessSets {
 public:
  ProcessSets(int32_t my_world_rank, std::vector<int> host_of_world,
              uint64_t epoch);

  // At init, in id order: the world, then each given set.
  void add_initial(std::vector<int32_t> world_ranks);
  // A negotiated addition: the new set's id (the next unused one: ids are
  // never reused, so no stale message of a removed set can match it).
  int32_t add(std::vector<int32_t> world_ranks);
  // A negotiated removal: the set goes to the retired ones; false when no
  // removable set has that id.
  bool retire(int32_t id);
  // The retired sets that hold no op, once the executor holds none of
  // their responses (ops enqueued before the removal still name theirs).
  void forget_retired();
  // At teardown: no set is left (any thread may still ask).
  void clear();

  ProcessSet* find(int32_t id) const;
  // The set's index in all() or all().size().
  size_t index_of(int32_t id) const;
  const std::vector<std::unique_ptr<ProcessSet>>& all() const { return sets_; }
  const std::vector<std::unique_ptr<ProcessSet>>& retired() const {
    return retired_;
  }
  ProcessSet& world() const { return *sets_.front(); }
  // Ids up to this one have been used.
  uint32_t next_id() const { return static_cast<uint32_t>(next_id_); }
  // Some set has this process as no member.
  bool has_outsider_sets() const;
  // Ops submitted here wait in negotiation for other ranks.
  bool awaiting_others() const;
  // Some set, current or retired, holds an op of this rank.
  bool holds_ops() const;

  // Any thread (the caller holds lock()).
  std::unique_lock<std::mutex> lock() const {
    return std::unique_lock<std::mutex>(mutex_);
  }
  // Any thread: whether a set has that id, and this process's rank in it
  // (-1 when not a member) and its size.
  bool exists(int32_t id) const;
  bool layout(int32_t id, int32_t* rank, int32_t* size) const;

  // Ops submitted here whose inputs are not ready yet, in their order
  // (their sets' tables own them).
  std::vector<PendingOp*> waiting;
  // Ops in negotiation offered by their cache bits (kAwaitingCacheBits);
  // their sets' tables hold them too.
  std::vector<PendingOp*> cached_waiting;

 private:
  int32_t my_world_rank_;
  std::vector<int> host_of_world_;
  uint64_t epoch_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<ProcessSet>> sets_;
  std::vector<std::unique_ptr<ProcessSet>> retired_;
  int32_t next_id_ = 0;
};

}  // namespace hvd::runtime
