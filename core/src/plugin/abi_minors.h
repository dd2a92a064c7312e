// The table minor from which each looser promise of the ABI holds: where
// the core decides how to call a plugin built for an older minor, it asks
// here (see docs/abi.md).
#pragma once

#include <cstdint>

namespace hvd {

// 1.3: a transport says whether it runs threads of its own
// (HVD_TRANSPORT_OWN_THREADS); one built before may run them.
constexpr uint32_t kMinorOwnThreadsFlag = 3;

// 1.4: calls may come from a thread waiting in hvd_wait, one at a time;
// a table built before is called from the background thread only.
constexpr uint32_t kMinorAnyThread = 4;

inline bool called_from_any_thread(uint32_t table_minor) {
  return table_minor >= kMinorAnyThread;
}

}  // namespace hvd
