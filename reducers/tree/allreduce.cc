// Recursive-doubling allreduce for any rank count.
//
// With p the largest power of two not above n and rem = n - p, each of the
// first 2*rem ranks pairs up: the even one sends its data to the odd one
// and waits for the result. The remaining p ranks exchange full buffers
// with the partner at distance 1, 2, 4, ... of their new rank. Every
// combination puts the lower rank's operand first, so both partners
// compute the same bits and all ranks end identical. Long messages are cut
// into segments that go through the steps one after another, two in
// flight.
#include <algorithm>

#include "../common/fold.h"
#include "../common/local_steps.h"
#include "../common/prologue.h"
#include "tree.h"

namespace hvd::reducers::tree {

using Op = Schedule::Op;

size_t segment_elems(const Collective& c, const Options& o,
                     uint32_t steps_per_segment) {
  size_t elems = std::max<size_t>(1, o.segment_bytes / c.esize);
  const size_t count = c.count;
  const size_t max_segments = std::max<size_t>(
      1, Schedule::kSteps / std::max<uint32_t>(steps_per_segment, 1));
  if ((count + elems - 1) / elems > max_segments) {
    elems = (count + max_segments - 1) / max_segments;
  }
  return elems;
}

void build_allreduce(hvd_task_s& t, const Collective& c, const Options& o) {
  if (allreduce_without_messages(t, c, "tree")) return;
  Schedule& s = t.schedule;
  const bool in_place = c.send == c.recv;
  const int32_t r = c.rank;
  const PowerOfTwoFold fold(c.size, r);
  const int32_t p = fold.p, rounds = fold.levels, new_rank = fold.new_rank;
  const bool folds = fold.folds, absorbs = fold.absorbs;

  const bool direct = !in_place && c.prescale == 1.0;
  const uint32_t steps = (uint32_t)rounds + 2;  // fold, rounds, unfold
  const size_t seg = std::min(segment_elems(c, o, steps), c.count);
  uint8_t* slots =
      folds ? nullptr : static_cast<uint8_t*>(t.lease(2 * c.bytes(seg)));
  Op slot_free[2] = {Schedule::kNone, Schedule::kNone};

  for (size_t at = 0, g = 0; at < c.count; at += seg, ++g) {
    const size_t len = std::min(seg, c.count - at);
    const size_t bytes = c.bytes(len);
    uint8_t* data = c.recv + c.bytes(at);
    const uint32_t tag = (uint32_t)g * steps;
    // Out of place and unscaled, the first exchange reads `send` itself and
    // its combination lands in `recv`: no copy first.
    const uint8_t* mine = direct ? c.send + c.bytes(at) : data;
    Op last = direct ? Schedule::kNone
                     : copy_and_scale(s, data, c.send + c.bytes(at), len,
                                      c.esize, c.prescale, 1.0, len);
    if (folds) {
      const Op sent = s.send(r + 1, mine, bytes, tag);
      s.after(sent, last);
      const Op result = s.recv(r + 1, data, bytes, tag + steps - 1);
      s.after(result, sent);
      continue;
    }
    uint8_t* slot = slots + (g % 2) * c.bytes(seg);
    Op& free_slot = slot_free[g % 2];
    auto combine = [&](int32_t partner, Op received, Op sent) {
      // The lower rank's operand first, on both partners.
      const Op reduced = partner < r ? s.reduce(data, slot, mine, len)
                                     : s.reduce(data, mine, slot, len);
      // The send reads what the combination overwrites only from `data`.
      s.after(reduced, {received, mine == data ? sent : Schedule::kNone, last});
      last = reduced;
      free_slot = reduced;
      mine = data;
    };
    if (absorbs) {
      const Op received = s.recv(r - 1, slot, bytes, tag);
      s.after(received, free_slot);
      combine(r - 1, received, Schedule::kNone);
    }
    for (int32_t i = 0, mask = 1; mask < p; mask <<= 1, ++i) {
      const int32_t partner = fold.old_rank(new_rank ^ mask);
      const uint32_t round_tag = tag + 1 + (uint32_t)i;
      const Op sent = s.send(partner, mine, bytes, round_tag);
      s.after(sent, last);
      const Op received = s.recv(partner, slot, bytes, round_tag);
      s.after(received, free_slot);
      combine(partner, received, sent);
    }
    if (c.postscale != 1.0) {
      const Op scaled = s.scale(data, len, c.postscale);
      s.after(scaled, last);
      last = scaled;
    }
    if (absorbs) {
      const Op sent = s.send(r - 1, data, bytes, tag + steps - 1);
      s.after(sent, last);
    }
  }
}

}  // namespace hvd::reducers::tree
