// Hierarchical allgather (each host's members are consecutive ranks, so a
// host's blocks are one contiguous span of `recv`): allgather inside the
// host; then local rank j carries piece j of its host's span to local rank
// j of every other host (an allgatherv across hosts); then, for each other
// host, an allgatherv inside the host of that host's pieces. Every byte
// crosses hosts once.
#include "hierarchical.h"
#include "horovod_plugin/boundary.h"

namespace hvd::reducers::hierarchical {

void build_allgather(hvd_task_s& t, const Collective& c, const Layout& l,
                     hvd_p2p* intra, hvd_p2p* cross, const Options& o) {
  const size_t L = (size_t)l.local_size();
  const size_t H = (size_t)l.host_count();
  const size_t me = (size_t)l.local;
  // Span of host h in recv, in elements.
  std::vector<size_t> start(H), extent(H);
  for (size_t h = 0; h < H; ++h) {
    start[h] = c.displs[h * L];
    extent[h] = 0;
    for (size_t j = 0; j < L; ++j) {
      const size_t r = h * L + j;
      if (c.displs[r] != start[h] + extent[h]) {
        throw hvd_plugin::Failure(
            HVD_ERR_UNSUPPORTED, "hierarchical allgather: the blocks of host " +
                                     std::to_string(h) +
                                     " are not contiguous in recv");
      }
      extent[h] += c.counts[r];
    }
  }
  auto phase = [&](hvd_p2p* on, const std::string* reducer) -> Phase& {
    Phase& p = t.phases.emplace_back();
    p.on = on;
    p.reducer = reducer;
    p.args.struct_size = sizeof p.args;
    p.args.collective = HVD_COLL_ALLGATHER;
    p.args.dtype = c.dtype;
    p.args.prescale = 1.0;
    p.args.postscale = 1.0;
    p.args.device = c.device;
    p.args.recv = c.recv;
    return p;
  };
  t.phases.clear();
  t.phases.reserve(2 + H);
  if (L > 1) {
    Phase& local = phase(intra, &o.intra);
    const size_t mine = (size_t)l.host * L;
    local.counts.assign(c.counts + mine, c.counts + mine + L);
    local.displs.assign(c.displs + mine, c.displs + mine + L);
    local.args.send = c.send;
    local.args.count = c.counts[mine + me];
  }
  // Piece j of host h's span: part j of extent[h] split L ways.
  Phase& across = phase(cross, &o.cross);
  across.counts.resize(H);
  across.displs.resize(H);
  for (size_t h = 0; h < H; ++h) {
    across.counts[h] = part_length(extent[h], L, me);
    across.displs[h] = start[h] + part_offset(extent[h], L, me);
  }
  across.args.count = across.counts[(size_t)l.host];
  across.args.send =
      L > 1 ? c.recv + c.bytes(across.displs[(size_t)l.host]) : c.send;
  if (L > 1) {
    for (size_t h = 0; h < H; ++h) {
      if ((int32_t)h == l.host) continue;
      Phase& gather = phase(intra, &o.intra);
      gather.counts.resize(L);
      gather.displs.resize(L);
      for (size_t j = 0; j < L; ++j) {
        gather.counts[j] = part_length(extent[h], L, j);
        gather.displs[j] = start[h] + part_offset(extent[h], L, j);
      }
      gather.args.count = gather.counts[me];
      gather.args.send = c.recv + c.bytes(gather.displs[me]);
    }
  }
  for (Phase& p : t.phases) {
    p.args.counts = p.counts.data();
    p.args.displs = p.displs.data();
  }
}

}  // namespace hvd::reducers::hierarchical
