// The hierarchical reducer: a composition of other reducers over the two
// transports. Allreduce: reduce-scatter inside each host (its peers are
// reached over `intra`), allreduce of each shard across hosts (over
// `inter`), allgather of the shards inside the host. Allgather: inside the
// host, then each local rank carries one piece of its host's block across
// hosts, then the pieces are gathered inside the host, one foreign host at
// a time. Each phase is a nested collective (hvd_p2p_api.collective) run by
// the reducer named in [reducer.hierarchical] (`intra` for the phases
// inside a host, `cross` for the one across hosts; "" lets the planner
// choose for that sub-team and size).
//
// Every rank gets the same bits: each shard is reduced once, by one cross
// reducer task whose result is the same on all its members, and then only
// copied. The order of the reduction differs from a flat ring's, so floating
// point sums equal the flat ring's bit for bit only where every partial sum
// is exact; integer types (every op) and MIN/MAX of any type always do.
//
// Offered where the team spans more than one host with the same number of
// members on each (allgather: each host's members also consecutive ranks).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "../common/collective.h"
#include "horovod/reducer.h"

namespace hvd::reducers::hierarchical {

struct Options {
  std::string intra;  // [reducer.hierarchical] intra: phases inside a host
  std::string cross;  // [reducer.hierarchical] cross: the phase across hosts
};

// Where this rank sits: the members of each host in team order.
struct Layout {
  std::vector<std::vector<int32_t>> hosts;  // host -> team ranks
  int32_t host = 0;                         // this rank's host
  int32_t local = 0;                        // index within it
  bool uniform = false;      // every host has the same number of members
  bool consecutive = false;  // host h holds ranks h*L .. h*L+L-1
  int32_t local_size() const { return (int32_t)hosts[host].size(); }
  int32_t host_count() const { return (int32_t)hosts.size(); }
};
Layout read_layout(const hvd_team& team);

// Whether the layout is one this reducer runs `coll` on.
bool offered(const Layout& layout, hvd_collective coll);

// One nested collective of the composition.
struct Phase {
  hvd_p2p* on = nullptr;  // the sub-team context it runs on
  const std::string* reducer = nullptr;
  hvd_coll_args args{};
  std::vector<size_t> counts, displs;
};

}  // namespace hvd::reducers::hierarchical

struct hvd_task_s {
  std::string name;  // "hierarchical allreduce", for messages
  const hvd_p2p_api* api = nullptr;
  std::vector<hvd::reducers::hierarchical::Phase> phases;
  size_t next = 0;  // the phase to post next
  hvd_p2p_request* inflight = nullptr;
  std::atomic<hvd_status> aborted{HVD_OK};
  std::atomic<int32_t> abort_peer{-1};
};

namespace hvd::reducers::hierarchical {

// The phases of each collective; `intra` and `cross` are the sub-team
// contexts of this rank's host and of its peers with the same local index.
void build_allreduce(hvd_task_s& task, const Collective& c, const Layout& l,
                     hvd_p2p* intra, hvd_p2p* cross, const Options& o);
void build_allgather(hvd_task_s& task, const Collective& c, const Layout& l,
                     hvd_p2p* intra, hvd_p2p* cross, const Options& o);

}  // namespace hvd::reducers::hierarchical
