// The transport conformance suite: one set of cases any transport plugin
// must pass, run by every rank of a world (2 or more ranks, all pairs
// connected). Rank 0 prints one line per case, "PASS <case>", "FAIL <case>:
// <reason>" or "SKIP <case>: <reason>", then "N passed, N failed".
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "horovod/transport.h"
#include "world.h"

namespace hvd_conformance {

struct SuiteOptions {
  std::vector<std::string> cases;     // empty: all, in the suite's order
  uint64_t max_bytes = 256ull << 20;  // largest message of the sizes case
  int timeout_s = 60;                 // per wait, before a case fails
  // The transport cannot see a peer go (mpi): in sever, only the severed
  // rank's own requests are checked.
  bool silent_peers = false;
};

// The cases' names, in the order they run (peer_death last: a rank leaves),
// then those that run only when named (sever: the plugin's fault hook).
std::vector<std::string> case_names();

// Runs the suite; returns the number of failed cases (the same on every
// rank that finishes). Throws std::invalid_argument for an unknown case.
int run_suite(World& world, const hvd_transport_api& api,
              const SuiteOptions& options, std::ostream& out);

// Bandwidth of 64 MiB messages (median) and small-message latency between
// ranks 0 and 1, printed by rank 0. Others wait.
void run_bench(World& world, const hvd_transport_api& api, std::ostream& out);

}  // namespace hvd_conformance
