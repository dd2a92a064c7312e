// The table minor from which each looser promise of the ABI holds: where
// the core decides how to call a plugin built for an older minor, it asks
// here (see docs/abi.md).
#pragma once

#include <cstdint>

#include "horovod/abi.h"

namespace hvd {

// 1.3: a transport says whether it runs threads of its own
// (HVD_TRANSPORT_OWN_THREADS); one built before may run them.
constexpr uint32_t kMinorOwnThreadsFlag = 3;

// 1.4: calls may come from a thread waiting in hvd_wait, one at a time, to
// every table of that minor; a table built before is called from the
// background thread only.
constexpr uint32_t kMinorAnyThread = 4;

// 1.5: that promise is the table's `threading` field, opted into by its
// author (HVD_THREADING_SERIALIZED), no longer implied by the minor.
constexpr uint32_t kMinorThreadingField = 5;

// Whether a plugin table (hvd_transport_api, hvd_reducer_api,
// hvd_adapter_api) accepts calls from a thread waiting in hvd_wait. Larger
// HVD_THREADING_* values than SERIALIZED would promise more, never less.
template <typename Table>
bool called_from_any_thread(const Table& table) {
  if (table.abi_minor < kMinorThreadingField) {
    return table.abi_minor == kMinorAnyThread;
  }
  return HVD_HAS_FIELD(&table, Table, threading) &&
         table.threading >= HVD_THREADING_SERIALIZED;
}

}  // namespace hvd
