#include <algorithm>
#include <new>

#include "../common/local_steps.h"
#include "../common/score_list.h"
#include "adasum.h"
#include "horovod_plugin/boundary.h"
#include "kernels.h"

using hvd_plugin::fail;

namespace hvd::reducers::adasum {
namespace {

using Op = Schedule::Op;

// One level's local work on this rank's half.
struct Pair {
  hvd_dtype dtype;
  uint8_t* own;        // this rank's vector, updated in place
  const uint8_t* got;  // the partner's vector, received
  size_t count;
  bool left;            // this rank's vector is a
  double partial[3];    // a.b, |a|^2, |b|^2 over this half
  const double* total;  // the same over the whole vector
};

// out = x + y, three doubles (one step of the sums' allreduce).
struct Sum {
  const double* x;
  const double* y;
  double* out;
};

hvd_status dot(void* ctx, const void*) {
  Pair& p = *static_cast<Pair*>(ctx);
  double own_first[3] = {0, 0, 0};
  dot_and_norms(p.dtype, p.own, p.got, p.count, own_first);
  p.partial[0] = own_first[0];
  p.partial[1] = p.left ? own_first[1] : own_first[2];
  p.partial[2] = p.left ? own_first[2] : own_first[1];
  return HVD_OK;
}

hvd_status add(void* ctx, const void*) {
  const Sum& s = *static_cast<const Sum*>(ctx);
  for (int k = 0; k < 3; ++k) s.out[k] = s.x[k] + s.y[k];
  return HVD_OK;
}

hvd_status combine(void* ctx, const void*) {
  const Pair& p = *static_cast<const Pair*>(ctx);
  const double ab = p.total[0], aa = p.total[1], bb = p.total[2];
  const double ca = aa >= 1e-8 ? 1.0 - ab / aa * 0.5 : 1.0;
  const double cb = bb >= 1e-8 ? 1.0 - ab / bb * 0.5 : 1.0;
  scaled_add(p.dtype, p.own, p.left ? ca : cb, p.got, p.left ? cb : ca,
             p.count);
  return HVD_OK;
}

}  // namespace

void build_allreduce(hvd_task_s& t, const Collective& c) {
  if (!has_kernels(c.dtype)) {
    fail(HVD_ERR_UNSUPPORTED, "adasum runs float16, float32 and float64, not " +
                                  std::string(dtype_name(c.dtype)));
  }
  if (!is_power_of_two(c.size)) {
    fail(HVD_ERR_UNSUPPORTED,
         "adasum needs a power-of-two number of ranks (as Horovod defines "
         "it); this team has " +
             std::to_string(c.size));
  }
  if (c.count == 0) return;
  const bool in_place = c.send == c.recv;
  if (!in_place &&
      overlaps(c.send, c.bytes(c.count), c.recv, c.bytes(c.count))) {
    fail(HVD_ERR_INVALID_ARGUMENT, "adasum allreduce: send and recv overlap");
  }
  Schedule& s = t.schedule;
  const int32_t r = c.rank;
  if (c.size == 1) {
    copy_and_scale(s, c.recv, c.send, c.count, c.esize, c.prescale, c.postscale,
                   local_piece_elems(c.esize));
    return;
  }
  int32_t levels = 0;
  while ((1 << levels) < c.size) ++levels;
  const uint32_t L = (uint32_t)levels;
  auto data_tag = [&](uint32_t i) { return i * (L + 1); };
  auto sum_tag = [&](uint32_t i, uint32_t k) { return i * (L + 1) + 1 + k; };
  auto gather_tag = [&](uint32_t i) { return L * (L + 1) + i; };

  // Local state: a Pair per level, a Sum and its 3 + 3 doubles per step of
  // each level's allreduce of the sums (level i has i + 1 steps).
  const size_t sum_steps = L * (L + 1) / 2;
  uint8_t* state = static_cast<uint8_t*>(t.lease(
      L * sizeof(Pair) + sum_steps * (sizeof(Sum) + 6 * sizeof(double))));
  Pair* pairs = reinterpret_cast<Pair*>(state);
  Sum* sums = reinterpret_cast<Sum*>(state + L * sizeof(Pair));
  double* values = reinterpret_cast<double*>(state + L * sizeof(Pair) +
                                             sum_steps * sizeof(Sum));
  uint8_t* received =
      static_cast<uint8_t*>(t.lease(c.bytes(c.count - c.count / 2)));

  Op ready = copy_and_scale(s, c.recv, c.send, c.count, c.esize, c.prescale,
                            1.0, local_piece_elems(c.esize));
  std::vector<Op>& sent_at = t.ops[0];
  t.offsets.assign(L, 0);  // per level: where the half given away starts
  t.lengths.assign(L, 0);  // and its length
  sent_at.assign(L, Schedule::kNone);
  size_t start = 0, count = c.count;
  size_t step = 0;
  for (uint32_t i = 0; i < L; ++i) {
    const int32_t partner = r ^ (1 << i);
    const bool left = (r & (1 << i)) == 0;
    const size_t first = count / 2, second = count - first;
    const size_t keep_at = left ? start : start + first;
    const size_t keep = left ? first : second;
    const size_t give_at = left ? start + first : start;
    const size_t give = left ? second : first;
    t.offsets[i] = give_at;
    t.lengths[i] = give;
    if (give > 0) {
      sent_at[i] = s.send(partner, c.recv + c.bytes(give_at), c.bytes(give),
                          data_tag(i));
      s.after(sent_at[i], ready);
    }
    Pair* pair = new (&pairs[i]) Pair{
        c.dtype, c.recv + c.bytes(keep_at), received, keep, left, {0, 0, 0},
        nullptr};
    Op before_dot = ready;  // the previous level's combination read `received`
    if (keep > 0) {
      const Op got = s.recv(partner, received, c.bytes(keep), data_tag(i));
      s.after(got, ready);
      before_dot = got;
    }
    Op last = s.call(dot, pair, nullptr);
    s.after(last, {before_dot, ready});
    const double* total = pair->partial;
    for (uint32_t k = 0; k <= i; ++k, ++step) {
      const int32_t peer = r ^ (1 << k);
      double* in = values + 6 * step;
      const Op sent = s.send(peer, total, 3 * sizeof(double), sum_tag(i, k));
      s.after(sent, last);
      const Op got = s.recv(peer, in, 3 * sizeof(double), sum_tag(i, k));
      Sum* sum = new (&sums[step])
          Sum{peer < r ? in : total, peer < r ? total : in, in + 3};
      const Op added = s.call(add, sum, nullptr);
      s.after(added, {last, got});
      last = added;
      total = sum->out;
    }
    pair->total = total;
    ready = s.call(combine, pair, nullptr);
    s.after(ready, last);
    start = keep_at;
    count = keep;
  }
  if (c.postscale != 1.0 && count > 0) {
    const Op scaled = s.scale(c.recv + c.bytes(start), count, c.postscale);
    s.after(scaled, ready);
    ready = scaled;
  }
  // Back up the levels: each rank sends everything it holds and receives
  // the half it gave away at that level.
  for (uint32_t i = L; i-- > 0;) {
    const int32_t partner = r ^ (1 << i);
    const Op done = s.join();
    if (count > 0) {
      const Op sent = s.send(partner, c.recv + c.bytes(start), c.bytes(count),
                             gather_tag(i));
      s.after(sent, ready);
      s.after(done, sent);
    }
    if (t.lengths[i] > 0) {
      const Op got = s.recv(partner, c.recv + c.bytes(t.offsets[i]),
                            c.bytes(t.lengths[i]), gather_tag(i));
      s.after(got, sent_at[i]);
      s.after(done, got);
    }
    s.after(done, ready);
    ready = done;
    start = std::min(start, t.offsets[i]);
    count += t.lengths[i];
  }
}

}  // namespace hvd::reducers::adasum
