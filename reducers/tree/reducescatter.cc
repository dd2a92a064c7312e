// Reducescatter(v) for small messages: the recursive-doubling allreduce of
// the whole input into scratch (log2 n steps instead of the ring's n-1),
// then this rank's block copied out. It sends n times the ring's volume,
// which only pays while latency dominates.
#include <algorithm>

#include "horovod_plugin/boundary.h"
#include "tree.h"

using hvd_plugin::fail;

namespace hvd::reducers::tree {

void build_reducescatter(hvd_task_s& t, const Collective& c, const Options& o) {
  size_t extent = 0, total = 0;
  for (int32_t k = 0; k < c.size; ++k) {
    extent = std::max(extent, c.displs[k] + c.counts[k]);
    total += c.counts[k];
  }
  if (total == 0) return;
  if (extent > c.count) {
    fail(HVD_ERR_INVALID_ARGUMENT,
         "tree reducescatter: blocks reach element " + std::to_string(extent) +
             " of a send of " + std::to_string(c.count));
  }
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
