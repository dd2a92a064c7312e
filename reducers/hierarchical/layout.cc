#include "hierarchical.h"

namespace hvd::reducers::hierarchical {

Layout read_layout(const hvd_team& team) {
  Layout l;
  l.hosts.resize((size_t)(team.host_count > 0 ? team.host_count : 1));
  for (int32_t r = 0; r < team.size; ++r) {
    const int32_t h = team.host_of ? team.host_of[r] : 0;
    if (h < 0) continue;
    if ((size_t)h >= l.hosts.size()) l.hosts.resize((size_t)h + 1);
    if (r == team.rank) {
      l.host = h;
      l.local = (int32_t)l.hosts[(size_t)h].size();
    }
    l.hosts[(size_t)h].push_back(r);
  }
  const size_t per_host = l.hosts[0].size();
  l.uniform = per_host > 0;
  l.consecutive = true;
  for (size_t h = 0; h < l.hosts.size(); ++h) {
    if (l.hosts[h].size() != per_host) l.uniform = false;
    for (size_t j = 0; j < l.hosts[h].size(); ++j) {
      if (l.hosts[h][j] != (int32_t)(h * per_host + j)) l.consecutive = false;
    }
  }
  l.consecutive = l.consecutive && l.uniform;
  return l;
}

bool offered(const Layout& l, hvd_collective coll) {
  if (l.host_count() < 2 || !l.uniform) return false;
  switch (coll) {
    case HVD_COLL_ALLREDUCE:
      return true;
    case HVD_COLL_ALLGATHER:
      return l.consecutive;
    default:
      return false;
  }
}

}  // namespace hvd::reducers::hierarchical
