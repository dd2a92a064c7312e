#include "timeline/record_queue.h"

namespace hvd::timeline {

RecordQueue::RecordQueue(size_t capacity) {
  size_t n = 2;
  while (n < capacity) n <<= 1;
  cells_ = std::make_unique<Cell[]>(n);
  for (size_t i = 0; i < n; ++i) {
    cells_[i].seq.store(i, std::memory_order_relaxed);
  }
  mask_ = n - 1;
}

}  // namespace hvd::timeline
