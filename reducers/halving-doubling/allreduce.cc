// Rabenseifner's allreduce: reduce-scatter by recursive halving, then
// allgather by recursive doubling, over the largest power of two p <= n.
//
// The buffer is cut into p blocks. Reduce-scatter step i pairs new rank v
// with v ^ m (m = p / 2^(i+1)); of the blocks both still share, the rank
// with bit m clear keeps the lower half and sends the upper, so after
// log2 p steps rank v holds block v reduced over everyone. Allgather runs
// the masks upwards, each rank sending all it holds. Each element's final
// value is computed once, on the rank that owns its block, postscaled
// there, and then copied around: every rank ends with the same bits.
//
// With rem = n - p, each of the first 2*rem ranks pairs up before and
// after: the even one sends everything to the odd one and gets the result
// back at the end.
//
// Each step's exchange is cut into chunks (a reduction overlaps the next
// chunk's transfer); a step starts once the previous one has finished.
// Out of place without a prescale, the first step reads `send` directly
// and partial results only ever land in `recv`.
#include <algorithm>

#include "../common/fold.h"
#include "../common/local_steps.h"
#include "../common/prologue.h"
#include "halving_doubling.h"

namespace hvd::reducers::halving_doubling {
namespace {

using Op = Schedule::Op;

struct Plan {
  const Collective& c;
  hvd_task_s& t;
  size_t chunk = 1;   // elements per chunk
  size_t chunks = 1;  // chunks a step may have at most (tag spacing)
  uint8_t* slots = nullptr;

  Schedule& s() const { return t.schedule; }
  uint32_t tag(uint32_t step, size_t k) const {
    return (uint32_t)(step * chunks + k);
  }

  // Sends elements [from, to) of `buf` to `peer`, each chunk after `ready`;
  // returns an op that finishes when every chunk has been sent.
  Op send(int32_t peer, const uint8_t* buf, size_t from, size_t to,
          uint32_t step, Op ready) const {
    const Op all = s().join();
    for (size_t at = from, k = 0; at < to; at += chunk, ++k) {
      const size_t len = std::min(chunk, to - at);
      const Op sent =
          s().send(peer, buf + c.bytes(at), c.bytes(len), tag(step, k));
      s().after(sent, ready);
      s().after(all, sent);
    }
    return all;
  }

  // Receives elements [from, to) from `peer` straight into `buf`.
  Op recv(int32_t peer, uint8_t* buf, size_t from, size_t to, uint32_t step,
          Op ready) const {
    const Op all = s().join();
    for (size_t at = from, k = 0; at < to; at += chunk, ++k) {
      const size_t len = std::min(chunk, to - at);
      const Op received =
          s().recv(peer, buf + c.bytes(at), c.bytes(len), tag(step, k));
      s().after(received, ready);
      s().after(all, received);
    }
    return all;
  }

  // Receives the peer's elements [from, to) into window slots and
  // combines them with `mine` into `out` (the lower rank's operand first).
  Op combine(int32_t peer, const uint8_t* mine, uint8_t* out, size_t from,
             size_t to, uint32_t step, Op ready) const {
    const Op all = s().join();
    Window& window = t.window;
    for (size_t at = from, k = 0; at < to; at += chunk, ++k) {
      const size_t len = std::min(chunk, to - at);
      const size_t slot = window.take();
      uint8_t* in = slots + slot * c.bytes(chunk);
      const Op received = s().recv(peer, in, c.bytes(len), tag(step, k));
      s().after(received, window.previous_release(slot));
      const uint8_t* own = mine + c.bytes(at);
      const Op reduced = peer < c.rank
                             ? s().reduce(out + c.bytes(at), in, own, len)
                             : s().reduce(out + c.bytes(at), own, in, len);
      s().after(reduced, {received, ready});
      window.release(slot, reduced);
      s().after(all, reduced);
    }
    return all;
  }
};

}  // namespace

void build_allreduce(hvd_task_s& t, const Collective& c, const Options& o) {
  if (allreduce_without_messages(t, c, "halving-doubling")) return;
  Schedule& s = t.schedule;
  const bool in_place = c.send == c.recv;
  const int32_t r = c.rank;
  const PowerOfTwoFold fold(c.size, r);
  const int32_t p = fold.p, levels = fold.levels, v = fold.new_rank;
  const bool folds = fold.folds, absorbs = fold.absorbs;

  // Steps: fold, levels of halving, levels of doubling, unfold.
  const uint32_t steps = 2 * (uint32_t)levels + 2;
  Plan plan{c, t};
  plan.chunk =
      std::min<size_t>(c.count, std::max<size_t>(1, o.chunk_bytes / c.esize));
  plan.chunks = (c.count + plan.chunk - 1) / plan.chunk;
  const size_t max_chunks = Schedule::kSteps / steps;
  if (plan.chunks > max_chunks) {
    plan.chunk = (c.count + max_chunks - 1) / max_chunks;
    plan.chunks = (c.count + plan.chunk - 1) / plan.chunk;
  }
  t.window.reset((size_t)o.pipeline_depth);

  const bool direct = !in_place && c.prescale == 1.0;
  const Op prepared =
      direct ? Schedule::kNone
             : copy_and_scale(s, c.recv, c.send, c.count, c.esize, c.prescale,
                              1.0, local_piece_elems(c.esize));
  const uint8_t* local = direct ? c.send : c.recv;

  if (folds) {
    const Op sent = plan.send(r + 1, local, 0, c.count, 0, prepared);
    plan.recv(r + 1, c.recv, 0, c.count, steps - 1, sent);
    return;
  }
  plan.slots =
      static_cast<uint8_t*>(t.lease(t.window.depth() * c.bytes(plan.chunk)));
  Op ready = prepared;
  if (absorbs) {
    ready = plan.combine(r - 1, local, c.recv, 0, c.count, 0, prepared);
    local = c.recv;
  }

  // Block k of p: elements [edge(k), edge(k + 1)).
  auto edge = [&](int32_t k) { return part_offset(c.count, (size_t)p, k); };
  std::vector<Op>& sent_at = t.ops[0];  // per level: its halving's sends
  sent_at.assign((size_t)levels, Schedule::kNone);
  int32_t lo = 0, hi = p;
  for (int32_t i = 0; i < levels; ++i) {
    const int32_t m = p >> (i + 1), mid = lo + m;
    const int32_t partner = fold.old_rank(v ^ m);
    const bool upper = (v & m) != 0;
    const int32_t keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
    const int32_t give_lo = upper ? lo : mid, give_hi = upper ? mid : hi;
    const uint32_t step = 1 + (uint32_t)i;
    sent_at[i] =
        plan.send(partner, local, edge(give_lo), edge(give_hi), step, ready);
    ready = plan.combine(partner, local, c.recv, edge(keep_lo), edge(keep_hi),
                         step, ready);
    local = c.recv;
    lo = keep_lo;
    hi = keep_hi;
  }
  uint8_t* owned = c.recv + c.bytes(edge(v));
  const Op scaled =
      copy_and_scale(s, owned, owned, edge(v + 1) - edge(v), c.esize,
                     c.postscale, 1.0, local_piece_elems(c.esize), ready);
  if (scaled != Schedule::kNone) ready = scaled;
  // Recursive doubling: at mask m this rank holds blocks [base, base + m).
  for (int32_t i = 0; i < levels; ++i) {
    const int32_t m = 1 << i, base = v & ~(m - 1);
    const int32_t partner = fold.old_rank(v ^ m), theirs = base ^ m;
    const uint32_t step = 1 + (uint32_t)levels + (uint32_t)i;
    const Op given =
        plan.send(partner, c.recv, edge(base), edge(base + m), step, ready);
    // Their blocks land where this rank sent from when halving at mask m.
    const Op got = plan.recv(partner, c.recv, edge(theirs), edge(theirs + m),
                             step, sent_at[levels - 1 - i]);
    ready = s.join();
    s.after(ready, {given, got});
  }
  if (absorbs) plan.send(r - 1, c.recv, 0, c.count, steps - 1, ready);
}

}  // namespace hvd::reducers::halving_doubling
