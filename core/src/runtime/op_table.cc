#include "runtime/op_table.h"

#include <utility>

#include "common/error.h"

namespace hvd::runtime {

const std::string OpTable::kJoinKey = "join";

const std::string& OpTable::key_of(const PendingOp& op) {
  return op.collective() == HVD_COLL_JOIN ? kJoinKey : op.name();
}

PendingOp* OpTable::insert(std::unique_ptr<PendingOp> op) {
  PendingOp* raw = op.get();
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = ops_.try_emplace(key_of(*raw));
  if (!inserted) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                raw->describe() +
                    ": an op of this name is already in flight on process "
                    "set " +
                    std::to_string(set_id_) +
                    " (names must be unique among ops in flight)");
  }
  raw->table = this;
  it->second = std::move(op);
  return raw;
}

std::unique_ptr<PendingOp> OpTable::release(const PendingOp& op) {
  std::unique_ptr<PendingOp> owned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = ops_.find(key_of(op));
    if (it != ops_.end() && it->second.get() == &op) {
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
  out.reserve(ops_.size());
  for (const auto& [key, op] : ops_) out.push_back(op.get());
  return out;
}

size_t OpTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ops_.size();
}

}  // namespace hvd::runtime
