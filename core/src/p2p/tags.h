// Transport tags for the point-to-point layer.
//
// A tag keeps apart the messages that may be in flight at once on one
// connection: those of different process sets, of different tasks (the
// response sequence number), of the sub-teams a task builds, and of the
// reducer's own steps, plus the world epoch. A transport may offer fewer
// bits than all of that needs (MPI: maybe 15), so each field gets a width
// from the transport's tag_bits: every field first gets a minimum, then the
// remaining bits go to the fields in order of importance up to their caps.
// A field narrower than its values wraps; messages with equal tags on one
// connection are matched in the order they were posted, so a wrapped field
// is only ambiguous between messages that are never in flight together.
#pragma once

#include <cstdint>

namespace hvd::p2p {

struct TagFields {
  uint32_t process_set = 0;
  uint64_t sequence = 0;  // the task: the response's number within its set
  uint32_t subteam = 0;   // 0: the task's team; i: its i-th sub-team
  uint32_t step = 0;      // the reducer's sub-tag, 0 .. 2^16-1
  uint64_t epoch = 0;
};

class TagLayout {
 public:
  // The layout for a transport offering `tag_bits` (at most 64 used).
  explicit TagLayout(uint32_t tag_bits);

  uint64_t compose(const TagFields& fields) const;
  TagFields decompose(uint64_t tag) const;

  uint32_t step_bits() const { return step_bits_; }
  uint32_t sequence_bits() const { return sequence_bits_; }
  uint32_t subteam_bits() const { return subteam_bits_; }
  uint32_t set_bits() const { return set_bits_; }
  uint32_t epoch_bits() const { return epoch_bits_; }
  uint32_t total_bits() const {
    return step_bits_ + sequence_bits_ + subteam_bits_ + set_bits_ +
           epoch_bits_;
  }

 private:
  uint32_t step_bits_ = 0, sequence_bits_ = 0, subteam_bits_ = 0, set_bits_ = 0,
           epoch_bits_ = 0;
};

}  // namespace hvd::p2p
