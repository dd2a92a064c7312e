// A pipeline window: at most `depth` items of a pipelined schedule hold a
// slot (a scratch buffer, a posted receive) at once. Item j takes slot
// j % depth and starts only after the item that held the slot before it
// released it.
#pragma once

#include <vector>

#include "schedule.h"

namespace hvd::reducers {

class Window {
 public:
  void reset(size_t depth) {
    release_.assign(depth > 0 ? depth : 1, Schedule::kNone);
    next_ = 0;
  }
  size_t depth() const { return release_.size(); }
  // The slot of the next item. Whatever uses it must wait for
  // previous_release(slot).
  size_t take() { return next_++ % release_.size(); }
  Schedule::Op previous_release(size_t slot) const { return release_[slot]; }
  // `op` frees the slot when it finishes.
  void release(size_t slot, Schedule::Op op) { release_[slot] = op; }

 private:
  std::vector<Schedule::Op> release_;
  size_t next_ = 0;
};

}  // namespace hvd::reducers
