#include "p2p/tags.h"

#include <algorithm>

namespace hvd::p2p {
namespace {

uint64_t mask(uint32_t bits) {
  return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

}  // namespace

TagLayout::TagLayout(uint32_t tag_bits) {
  uint32_t left = std::min<uint32_t>(tag_bits, 64);
  // In order of importance: the reducer's steps, the task sequence, the
  // sub-team, the process set, the epoch (the epoch is also checked by every
  // connection handshake, so it is the first to go).
  uint32_t* fields[] = {&step_bits_, &sequence_bits_, &subteam_bits_,
                        &set_bits_, &epoch_bits_};
  const uint32_t minimum[] = {8, 2, 1, 1, 0};
  const uint32_t cap[] = {16, 24, 4, 12, 8};
  for (int i = 0; i < 5; ++i) {
    uint32_t give = std::min(minimum[i], left);
    *fields[i] = give;
    left -= give;
  }
  for (int i = 0; i < 5; ++i) {
    uint32_t give = std::min(cap[i] - *fields[i], left);
    *fields[i] += give;
    left -= give;
  }
}

uint64_t TagLayout::compose(const TagFields& f) const {
  uint64_t tag = 0;
  uint32_t shift = 0;
  auto put = [&](uint64_t value, uint32_t bits) {
    if (bits == 0) return;
    tag |= (value & mask(bits)) << shift;
    shift += bits;
  };
  put(f.step, step_bits_);
  put(f.subteam, subteam_bits_);
  put(f.sequence, sequence_bits_);
  put(f.process_set, set_bits_);
  put(f.epoch, epoch_bits_);
  return tag;
}

TagFields TagLayout::decompose(uint64_t tag) const {
  TagFields f;
  uint32_t shift = 0;
  auto take = [&](uint32_t bits) -> uint64_t {
    if (bits == 0) return 0;
    uint64_t value = (tag >> shift) & mask(bits);
    shift += bits;
    return value;
  };
  f.step = static_cast<uint32_t>(take(step_bits_));
  f.subteam = static_cast<uint32_t>(take(subteam_bits_));
  f.sequence = take(sequence_bits_);
  f.process_set = static_cast<uint32_t>(take(set_bits_));
  f.epoch = take(epoch_bits_);
  return f;
}

}  // namespace hvd::p2p
