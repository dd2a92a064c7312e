// The shared segment of a collectives communicator: a header, one control
// block per member (its step counter per lane and its sleeping flag on cache
// lines of their own, its pid and wake socket name, two inline slots), then
// per member and lane two data slots, used by alternate rounds.
//
// Every phase of every collective bumps each member's step by one, in the
// same sequence on every member; a member waits until every other's step
// has reached its own (an inline collective's step is published in its
// inline slot only, and waited for there). Round g uses slot parity g % 2:
// a member starts round g + 2 only after the sync of round g + 1, which
// every other member reaches only after it has read all of round g, so no
// extra wait guards the slots.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hvd_shm {

constexpr uint64_t kCommMagic = 0x6876642d636f6c6cull;  // "hvd-coll"
constexpr uint32_t kCommVersion = 3;
constexpr size_t kCommLine = 128;  // two lines: no false sharing by prefetch
constexpr size_t kWakeNameMax = 100;

struct alignas(kCommLine) CommHeader {
  uint64_t magic;
  uint32_t version;
  int32_t size;
  uint64_t slot_bytes;
  uint64_t one_shot_max;
  std::atomic<int32_t> attached;  // members that have mapped the segment
};

// A tiny collective's data travels in one cache line with its own copy of
// the step, so a waiter that sees the step has the data too (one line
// transfer instead of two).
constexpr size_t kInlineBytes = 56;
struct alignas(kCommLine) InlineSlot {
  std::atomic<uint64_t> step;
  uint8_t data[kInlineBytes];
};

// Collectives of one lane run in order; the two lanes run side by side, so
// a small collective never waits behind a large one. Lane 0: allreduces up
// to one_shot_max, barriers, broadcasts and allgathers that fit its slots;
// lane 1 the rest.
constexpr int kLanes = 2;
struct alignas(kCommLine) StepLine {
  std::atomic<uint64_t> step;
};

struct alignas(kCommLine) RankControl {
  StepLine steps[kLanes];
  alignas(kCommLine) std::atomic<uint32_t> sleeping;
  alignas(kCommLine) uint32_t pid;
  char wake_name[kWakeNameMax];
  InlineSlot inline_slot[2];  // lane 0's, by round parity, like the slots
};

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// Bytes before the first data slot, page-aligned.
inline size_t comm_data_offset(int32_t size) {
  size_t bytes =
      sizeof(CommHeader) + static_cast<size_t>(size) * sizeof(RankControl);
  return (bytes + 4095) & ~size_t(4095);
}

// Lane 0's slots: one_shot_max, in whole pages.
inline uint64_t comm_small_slot_bytes(uint64_t one_shot_max) {
  return (std::max<uint64_t>(one_shot_max, 1) + 4095) & ~uint64_t(4095);
}

// Per member: two slots of lane 0, then two of lane 1 (slot_bytes).
inline uint64_t comm_member_bytes(uint64_t slot_bytes, uint64_t one_shot_max) {
  return 2 * comm_small_slot_bytes(one_shot_max) + 2 * slot_bytes;
}

inline size_t comm_segment_bytes(int32_t size, uint64_t slot_bytes,
                                 uint64_t one_shot_max) {
  return comm_data_offset(size) +
         static_cast<size_t>(size) *
             comm_member_bytes(slot_bytes, one_shot_max);
}

}  // namespace hvd_shm
