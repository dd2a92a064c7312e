// Fusion planning on the coordinator: ready responses of the same
// collective, dtype, memory kind and parameters (op and scale factors,
// root) are merged, in order, into responses of at most `threshold` bytes,
// which every rank then packs into one persistent fusion buffer. Alltoall,
// errors, barriers and joins are never fused; responses from the response
// cache fuse only with each other. An entry (a grouped op's tensors
// included) is never split. Pure logic.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/messages.h"

namespace hvd::runtime {

// Bytes of the entry's data: what each rank contributes to an allreduce,
// broadcast or reducescatter; the whole gathered output of an allgather;
// the average per rank sent by an alltoall.
uint64_t entry_bytes(const Response& response, const Entry& entry,
                     int32_t set_size);
uint64_t response_bytes(const Response& response, int32_t set_size);
uint64_t element_count(const std::vector<int64_t>& shape);

// Each output response keeps its entries in input order; responses come
// out in the order of their first entry. threshold 0 disables fusion.
std::vector<Response> fuse(std::vector<Response> ready, uint64_t threshold,
                           int32_t set_size);

}  // namespace hvd::runtime
