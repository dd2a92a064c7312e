// A bounded lock-free queue of fixed-size timeline records: any thread
// pushes (one compare-and-swap, never a lock, never a wait), one writer
// thread pops. A full queue refuses the record instead of blocking the data
// path (Vyukov's bounded queue, single consumer).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace hvd::timeline {

enum class RecordKind : uint8_t {
  kBegin,    // a span opens on `row`
  kEnd,      // the innermost span of `row` closes
  kInstant,  // a point on `row`
  kCycle,    // the start of a background cycle (no row)
};

enum class ArgKey : uint8_t { kNone, kRank, kLastRank, kBytes };

struct Record {
  int64_t ns = 0;                    // steady clock
  const std::string* row = nullptr;  // interned; lives as long as the queue
  const char* name = nullptr;        // a literal or an interned string
  int64_t arg = 0;
  RecordKind kind = RecordKind::kBegin;
  ArgKey arg_key = ArgKey::kNone;
};

class RecordQueue {
 public:
  // `capacity` is rounded up to a power of two.
  explicit RecordQueue(size_t capacity);

  // Any thread. False when full.
  bool push(const Record& record) {
    size_t pos = tail_.load(std::memory_order_relaxed);
    while (true) {
      Cell& cell = cells_[pos & mask_];
      size_t seq = cell.seq.load(std::memory_order_acquire);
      intptr_t dif = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (dif == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1,
                                        std::memory_order_relaxed)) {
          cell.record = record;
          cell.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (dif < 0) {
        return false;
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  // The writer thread only. False when empty.
  bool pop(Record& out) {
    Cell& cell = cells_[head_ & mask_];
    size_t seq = cell.seq.load(std::memory_order_acquire);
    if (static_cast<intptr_t>(seq) - static_cast<intptr_t>(head_ + 1) < 0) {
      return false;
    }
    out = cell.record;
    cell.seq.store(head_ + mask_ + 1, std::memory_order_release);
    ++head_;
    return true;
  }

  size_t capacity() const { return mask_ + 1; }

 private:
  struct Cell {
    std::atomic<size_t> seq;
    Record record;
  };
  std::unique_ptr<Cell[]> cells_;
  size_t mask_;
  alignas(64) std::atomic<size_t> tail_{0};
  alignas(64) size_t head_ = 0;
};

}  // namespace hvd::timeline
