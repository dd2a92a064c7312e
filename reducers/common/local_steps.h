// Local work cut into pieces, so no single progress() call copies or
// scales a whole large buffer and later steps can start on the first
// pieces while the rest is still being prepared.
#pragma once

#include <cstddef>
#include <cstdint>

#include "schedule.h"

namespace hvd::reducers {

// For each piece of `count` elements: copy src to dst (unless they are the
// same), then scale by `first`, then by `second` (factors of 1 are
// skipped). Pieces start after `after`. Returns an op that finishes after
// every piece, or kNone when there is nothing to do.
Schedule::Op copy_and_scale(Schedule& s, uint8_t* dst, const uint8_t* src,
                            size_t count, size_t esize, double first,
                            double second, size_t piece_elems,
                            Schedule::Op after = Schedule::kNone);

// Elements per piece of local work, about 1 MiB.
inline size_t local_piece_elems(size_t esize) {
  return (size_t(1) << 20) / (esize > 0 ? esize : 1);
}

}  // namespace hvd::reducers
