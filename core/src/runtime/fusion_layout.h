// Where the data of one negotiated response lies on this rank: the fusion
// buffer's layout (tensors packed back to back, in entry order, ranks'
// blocks in rank order where the collective has them), or the caller's own
// tensors when the response runs in place; what the reducer is given
// (send and receive places, counts and displacements in elements); and the
// copies into the buffer before the reducer runs and out of it after.
// Pure: it reads the response and what this rank holds of each entry, and
// names places by offset; the executor turns them into pointers.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/messages.h"

namespace hvd::runtime {

// A byte position: in the fusion buffer, in an entry's input or output
// tensor, or nowhere (a copy from kZeros fills with zeros).
struct Place {
  enum class In : uint8_t { kBuffer, kInput, kOutput, kZeros };
  In in = In::kBuffer;
  uint32_t entry = 0;   // kInput, kOutput: which entry
  uint32_t tensor = 0;  // and which of its tensors
  uint64_t offset = 0;  // bytes into the buffer or the tensor

  bool operator==(const Place&) const = default;
};

struct Copy {
  Place to;
  Place from;
  uint64_t bytes = 0;

  bool operator==(const Copy&) const = default;
};

// What this rank holds of one entry: its inputs (false: the rank joined
// without the tensor; an allreduce then contributes zeros) and outputs to
// write (false also when allocating them failed).
struct Held {
  bool inputs = false;
  bool outputs = false;
};

struct Layout {
  uint64_t buffer_bytes = 0;  // the fusion buffer needed; 0 in place
  Place send, recv;           // hvd_coll_args.send / recv
  uint64_t count = 0;         // hvd_coll_args.count
  // hvd_coll_args.counts / displs (allgather, reducescatter: per rank;
  // alltoall: received from each peer) and send_counts / send_displs
  // (alltoall), in elements; empty where the collective has none.
  std::vector<size_t> counts, displs, send_counts, send_displs;
  std::vector<int32_t> received_splits;  // alltoall: rows from each peer
  bool moves_data = false;               // false: nothing to send anywhere
  std::vector<Copy> copy_in, copy_out;
};

// The layout of data response `response` (allreduce, broadcast, allgather,
// alltoall or reducescatter) on set rank `rank` of `size`; `held` has one
// element per entry. In place (`in_place`: one entry of one tensor, held)
// the reducer works on the entry's own tensors and no buffer is needed.
// Written into `out`, whose storage is reused (one layout per response on
// the hot path). Throws hvd::Error HVD_ERR_INTERNAL for another collective
// or a response whose entries do not fit it (per-rank rows missing, held of
// another size).
void lay_out(const Response& response, int32_t rank, int32_t size,
             const std::vector<Held>& held, bool in_place, Layout& out);

// The shape of output `tensor` of entry `entry` on set rank `rank` of an
// allgather (every rank's rows) or alltoall (the rows sent to this rank),
// which the core allocates once negotiation has told it.
std::vector<int64_t> gathered_shape(const Response& response, size_t entry,
                                    size_t tensor, int32_t rank);

}  // namespace hvd::runtime
