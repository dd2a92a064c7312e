#include "bootstrap/layout.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>

#include "common/error.h"

namespace hvd {

HostLayout layout_from_hosts(const std::vector<std::string>& host_of_rank,
                             int rank) {
  HostLayout layout;
  std::map<std::string, int> index_of_host;
  layout.host_of.reserve(host_of_rank.size());
  for (const std::string& host : host_of_rank) {
    auto [it, added] =
        index_of_host.emplace(host, static_cast<int>(index_of_host.size()));
    layout.host_of.push_back(it->second);
  }
  int mine = layout.host_of.at(rank);
  layout.hostname = host_of_rank[rank];
  layout.cross_rank = mine;
  layout.cross_size = static_cast<int>(index_of_host.size());
  layout.local_rank = 0;
  layout.local_size = 0;
  for (int r = 0; r < static_cast<int>(layout.host_of.size()); ++r) {
    if (layout.host_of[r] != mine) continue;
    if (r < rank) ++layout.local_rank;
    ++layout.local_size;
  }
  return layout;
}

std::string this_host_identity() {
  if (const char* name = getenv("HOROVOD_HOSTNAME"); name && *name) {
    return name;
  }
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) {
    throw Error(HVD_ERR_SYSTEM, std::string("gethostname: ") + strerror(errno));
  }
  return buf;
}

int env_int(const char* name) {
  const char* text = getenv(name);
  if (!text || !*text) return -1;
  char* end = nullptr;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0 || value > INT_MAX) {
    throw Error(HVD_ERR_CONFIG, std::string(name) + "='" + text +
                                    "' is not a non-negative integer");
  }
  return static_cast<int>(value);
}

}  // namespace hvd
