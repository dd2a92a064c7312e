// The ops of one process set on this rank, from hvd_enqueue until each
// completes: the table owns them, keyed by name, and a set's one join in
// flight in a slot of its own (any name, "join" too, is a tensor's). Every
// other holder (the intake's queue, the cycle's lists,
// the set's negotiating view, the executor's slots) keeps a non-owning
// pointer, valid until the op is released from here; completion releases
// it exactly once (OpIntake::complete).
//
// Any thread: hvd_enqueue inserts on the caller's thread, the progress
// lock's holder releases.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/pending_op.h"

namespace hvd::runtime {

class OpTable {
 public:
  explicit OpTable(int32_t set_id) : set_id_(set_id) {}
  OpTable(const OpTable&) = delete;
  OpTable& operator=(const OpTable&) = delete;

  // Takes `op` and returns it, noting itself as its owner. Throws
  // hvd::Error HVD_ERR_INVALID_ARGUMENT naming the op and the set when an
  // op of its name, or for a join another join, is in flight (the op is
  // then dropped).
  PendingOp* insert(std::unique_ptr<PendingOp> op);
  // Gives `op` up to the caller, who completes and frees it. Throws
  // hvd::Error HVD_ERR_INTERNAL naming the op when this table does not
  // hold it: it was released before (a second completion, a bug).
  std::unique_ptr<PendingOp> release(const PendingOp& op);
  // The ops held now, in no particular order.
  std::vector<PendingOp*> ops() const;
  size_t size() const;
  bool empty() const { return size() == 0; }

 private:
  // Where `op` is held, or would be: its name's entry or the join's slot.
  std::unique_ptr<PendingOp>& slot_of(const PendingOp& op);

  const int32_t set_id_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<PendingOp>> ops_;
  std::unique_ptr<PendingOp> join_;
};

}  // namespace hvd::runtime
