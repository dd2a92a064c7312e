// Reducescatter(v) for small messages: the recursive-doubling allreduce of
// the whole input into scratch (log2 n steps instead of the ring's n-1),
// then this rank's block copied out. It sends n times the ring's volume,
// which only pays while latency dominates.
#include "../common/prologue.h"
#include "tree.h"

namespace hvd::reducers::tree {

void build_reducescatter(hvd_task_s& t, const Collective& c, const Options& o) {
  const size_t extent = reducescatter_extent(c, "tree");
  if (extent == 0) return;
  Schedule& s = t.schedule;
  Collective whole = c;
  whole.kind = HVD_COLL_ALLREDUCE;
  whole.count = extent;
  whole.recv = static_cast<uint8_t*>(t.lease(c.bytes(extent)));
  const Schedule::Op first = static_cast<Schedule::Op>(s.size());
  build_allreduce(t, whole, o);
  const Schedule::Op reduced = s.join_since(first);
  const Schedule::Op out =
      s.copy(c.recv, whole.recv + c.bytes(c.displs[c.rank]),
             c.bytes(c.counts[c.rank]));
  s.after(out, reduced);
}

}  // namespace hvd::reducers::tree
