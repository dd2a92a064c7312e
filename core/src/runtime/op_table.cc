#include "runtime/op_table.h"

#include <utility>

#include "common/error.h"

namespace hvd::runtime {

std::unique_ptr<PendingOp>& OpTable::slot_of(const PendingOp& op) {
  return op.collective() == HVD_COLL_JOIN ? join_ : ops_[op.name()];
}

PendingOp* OpTable::insert(std::unique_ptr<PendingOp> op) {
  PendingOp* raw = op.get();
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<PendingOp>& slot = slot_of(*raw);
  if (slot) {
    bool join = raw->collective() == HVD_COLL_JOIN;
    throw Error(
        HVD_ERR_INVALID_ARGUMENT,
        raw->describe() +
            (join ? ": a join is already in flight on process set "
                  : ": an op of this name is already in flight on "
                    "process set ") +
            std::to_string(set_id_) +
            (join ? "" : " (names must be unique among ops in flight)"));
  }
  raw->table = this;
  slot = std::move(op);
  return raw;
}

std::unique_ptr<PendingOp> OpTable::release(const PendingOp& op) {
  std::unique_ptr<PendingOp> owned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (op.collective() == HVD_COLL_JOIN) {
      if (join_.get() == &op) owned = std::move(join_);
    } else if (auto it = ops_.find(op.name());
               it != ops_.end() && it->second.get() == &op) {
      owned = std::move(it->second);
      ops_.erase(it);
    }
  }
  if (!owned) {
    throw Error(HVD_ERR_INTERNAL,
                op.describe() + ": completed twice (process set " +
                    std::to_string(set_id_) + " no longer holds it)");
  }
  return owned;
}

std::vector<PendingOp*> OpTable::ops() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<PendingOp*> out;
  out.reserve(ops_.size() + 1);
  for (const auto& [name, op] : ops_) out.push_back(op.get());
  if (join_) out.push_back(join_.get());
  return out;
}

size_t OpTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ops_.size() + (join_ ? 1 : 0);
}

}  // namespace hvd::runtime
