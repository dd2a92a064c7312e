// Hierarchical allreduce: reduce-scatter inside the host, allreduce of this
// rank's shard with the same shard of every other host, allgather of the
// shards inside the host. Shard j is part j of the buffer split into
// local_size nearly equal parts. The prescale goes to the first reduction,
// the postscale to the last, so each applies once.
#include "hierarchical.h"

namespace hvd::reducers::hierarchical {
namespace {

hvd_coll_args base_args(const Collective& c, hvd_collective kind) {
  hvd_coll_args a{};
  a.struct_size = sizeof a;
  a.collective = kind;
  a.dtype = c.dtype;
  a.op = c.op;
  a.prescale = 1.0;
  a.postscale = 1.0;
  a.device = c.device;
  return a;
}

}  // namespace

void build_allreduce(hvd_task_s& t, const Collective& c, const Layout& l,
                     hvd_p2p* intra, hvd_p2p* cross, const Options& o) {
  const size_t L = (size_t)l.local_size();
  const size_t me = (size_t)l.local;
  const size_t off = part_offset(c.count, L, me);
  const size_t len = part_length(c.count, L, me);
  uint8_t* shard = c.recv + c.bytes(off);
  const bool alone = L == 1;  // nothing to do inside the host
  t.phases.clear();
  t.phases.reserve(3);
  if (!alone) {
    Phase& rs = t.phases.emplace_back();
    rs.on = intra;
    rs.reducer = &o.intra;
    rs.args = base_args(c, HVD_COLL_REDUCESCATTER);
    rs.counts.resize(L);
    rs.displs.resize(L);
    for (size_t j = 0; j < L; ++j) {
      rs.counts[j] = part_length(c.count, L, j);
      rs.displs[j] = part_offset(c.count, L, j);
    }
    rs.args.send = c.send;
    rs.args.recv = shard;
    rs.args.count = c.count;
    rs.args.prescale = c.prescale;
  }
  // Posted even for an empty shard (fewer elements than ranks per host):
  // each nested collective takes the task's next sub-team number, which is
  // part of its messages' tags, so a rank that skipped this phase would
  // send and expect the allgather below under another tag than its
  // host-mates, and the job would hang.
  {
    Phase& ar = t.phases.emplace_back();
    ar.on = cross;
    ar.reducer = &o.cross;
    ar.args = base_args(c, HVD_COLL_ALLREDUCE);
    ar.args.send = alone ? c.send : shard;
    ar.args.recv = shard;
    ar.args.count = len;
    ar.args.prescale = alone ? c.prescale : 1.0;
    ar.args.postscale = c.postscale;
  }
  if (!alone) {
    Phase& ag = t.phases.emplace_back();
    ag.on = intra;
    ag.reducer = &o.intra;
    ag.args = base_args(c, HVD_COLL_ALLGATHER);
    ag.counts = t.phases.front().counts;
    ag.displs = t.phases.front().displs;
    ag.args.send = shard;
    ag.args.recv = c.recv;
    ag.args.count = len;
  }
  for (Phase& p : t.phases) {
    if (!p.counts.empty()) {
      p.args.counts = p.counts.data();
      p.args.displs = p.displs.data();
    }
  }
}

}  // namespace hvd::reducers::hierarchical
