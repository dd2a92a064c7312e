#include "prologue.h"

#include <algorithm>
#include <string>

#include "horovod_plugin/boundary.h"
#include "local_steps.h"

using hvd_plugin::fail;

namespace hvd::reducers {

bool allreduce_without_messages(hvd_task_s& t, const Collective& c,
                                const char* reducer) {
  if (c.count == 0) return true;
  if (c.send != c.recv &&
      overlaps(c.send, c.bytes(c.count), c.recv, c.bytes(c.count))) {
    fail(HVD_ERR_INVALID_ARGUMENT,
         std::string(reducer) + " allreduce: send and recv overlap");
  }
  if (c.size > 1) return false;
  copy_and_scale(t.schedule, c.recv, c.send, c.count, c.esize, c.prescale,
                 c.postscale, local_piece_elems(c.esize));
  return true;
}

bool place_own_block(hvd_task_s& t, const Collective& c, const char* reducer) {
  const size_t mine = c.counts[c.rank];
  uint8_t* own = c.recv + c.bytes(c.displs[c.rank]);
  // In place: own block already at its place (MPI_IN_PLACE style).
  if (c.send == own || c.send == c.recv) return true;
  if (mine == 0) return false;
  size_t extent = 0;
  for (int32_t k = 0; k < c.size; ++k) {
    extent = std::max(extent, c.displs[k] + c.counts[k]);
  }
  if (overlaps(c.send, c.bytes(mine), c.recv, c.bytes(extent))) {
    fail(HVD_ERR_INVALID_ARGUMENT,
         std::string(reducer) +
             " allgather: send overlaps recv other than at this rank's block");
  }
  copy_and_scale(t.schedule, own, c.send, mine, c.esize, 1.0, 1.0,
                 local_piece_elems(c.esize));
  return false;
}

size_t reducescatter_extent(const Collective& c, const char* reducer) {
  size_t extent = 0, total = 0;
  for (int32_t k = 0; k < c.size; ++k) {
    extent = std::max(extent, c.displs[k] + c.counts[k]);
    total += c.counts[k];
  }
  if (total == 0) return 0;
  if (extent > c.count) {
    fail(HVD_ERR_INVALID_ARGUMENT,
         std::string(reducer) + " reducescatter: blocks reach element " +
             std::to_string(extent) + " of a send of " +
             std::to_string(c.count));
  }
  return extent;
}

}  // namespace hvd::reducers
