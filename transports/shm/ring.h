// The shared segment of one connection: a header, then two single-producer /
// single-consumer byte rings, one per direction. Side 0 is the end that
// connected, side 1 the end that accepted; ring[s] is written by side s.
//
// `head` counts bytes ever written (only the producer stores it), `tail`
// bytes ever consumed (only the consumer stores it); each sits on its own
// cache line, as does each side's `sleeping` flag. A side sets its flag
// before it sleeps on its wake fd; whoever changes an index the sleeper waits
// on checks the flag after a full fence and writes to the sleeper's eventfd
// only then, so the fast path makes no system call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hvd_shm {

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

constexpr uint32_t kSegmentMagic = 0x48564452;  // "HVDR"
constexpr uint32_t kSegmentVersion = 1;

struct alignas(64) SharedFlag {
  std::atomic<uint32_t> value;
};

struct alignas(64) SharedIndex {
  std::atomic<uint64_t> value;
};

struct RingControl {
  SharedIndex head;
  SharedIndex tail;
};

struct SegmentHeader {
  alignas(64) uint32_t magic;
  uint32_t version;
  uint64_t ring_bytes;   // per direction, a power of two
  uint64_t data_offset;  // of ring[0]'s bytes; ring[1]'s follow
  SharedFlag sleeping[2];
  RingControl ring[2];
};

// Bytes of a connection segment with rings of `ring_bytes`.
inline size_t segment_bytes(size_t ring_bytes) {
  size_t header = (sizeof(SegmentHeader) + 4095) & ~size_t{4095};
  return header + 2 * ring_bytes;
}

// Fills in a fresh segment (its memory is zero).
inline void init_segment(void* base, size_t ring_bytes) {
  auto* h = static_cast<SegmentHeader*>(base);
  h->magic = kSegmentMagic;
  h->version = kSegmentVersion;
  h->ring_bytes = ring_bytes;
  h->data_offset = (sizeof(SegmentHeader) + 4095) & ~size_t{4095};
}

using CopyFn = void (*)(void* dst, const void* src, size_t bytes,
                        bool streaming);

// The producer's view of one ring.
class RingWriter {
 public:
  void attach(RingControl* control, uint8_t* data, uint64_t bytes) {
    control_ = control;
    data_ = data;
    size_ = bytes;
    head_ = control->head.value.load(std::memory_order_relaxed);
    tail_ = control->tail.value.load(std::memory_order_acquire);
  }

  // Free bytes; reloads the consumer's tail only when the cached one says
  // there are fewer than `want`.
  uint64_t space(uint64_t want = 1) {
    uint64_t free = size_ - (head_ - tail_);
    if (free < want) {
      tail_ = control_->tail.value.load(std::memory_order_acquire);
      free = size_ - (head_ - tail_);
    }
    return free;
  }

  void write(const void* src, uint64_t bytes) {
    const auto* s = static_cast<const uint8_t*>(src);
    uint64_t at = head_ & (size_ - 1);
    uint64_t first = bytes < size_ - at ? bytes : size_ - at;
    std::memcpy(data_ + at, s, first);
    std::memcpy(data_, s + first, bytes - first);
    head_ += bytes;
    unpublished_ = true;
  }

  // Makes what was written visible to the consumer. Returns whether there
  // was anything new.
  bool publish() {
    if (!unpublished_) return false;
    control_->head.value.store(head_, std::memory_order_release);
    unpublished_ = false;
    return true;
  }

  bool idle() const { return !unpublished_; }

 private:
  RingControl* control_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  bool unpublished_ = false;
};

// The consumer's view of one ring.
class RingReader {
 public:
  void attach(RingControl* control, uint8_t* data, uint64_t bytes) {
    control_ = control;
    data_ = data;
    size_ = bytes;
    tail_ = control->tail.value.load(std::memory_order_relaxed);
    head_ = control->head.value.load(std::memory_order_acquire);
  }

  // Bytes ready to read, or UINT64_MAX when the producer's head is
  // impossible (a corrupt segment). Reloads the head only when the cached
  // one says there are fewer than `want`.
  uint64_t available(uint64_t want = 1) {
    uint64_t ready = head_ - tail_;
    if (ready < want) {
      head_ = control_->head.value.load(std::memory_order_acquire);
      ready = head_ - tail_;
      if (ready > size_) return UINT64_MAX;
    }
    return ready;
  }

  // Copies `bytes` out (to nowhere when dst is null) and consumes them.
  void read(void* dst, uint64_t bytes, CopyFn copy, bool streaming) {
    uint64_t at = tail_ & (size_ - 1);
    uint64_t first = bytes < size_ - at ? bytes : size_ - at;
    if (dst != nullptr) {
      auto* d = static_cast<uint8_t*>(dst);
      copy(d, data_ + at, first, streaming);
      if (bytes > first) copy(d + first, data_, bytes - first, streaming);
    }
    tail_ += bytes;
    unreleased_ = true;
  }

  // Hands consumed bytes back to the producer. Returns whether there were
  // any.
  bool release() {
    if (!unreleased_) return false;
    control_->tail.value.store(tail_, std::memory_order_release);
    unreleased_ = false;
    return true;
  }

 private:
  RingControl* control_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  bool unreleased_ = false;
};

}  // namespace hvd_shm
