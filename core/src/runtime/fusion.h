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

// fuse() over cached single-entry responses read in place: `at(bit)` is
// the cached response at each of `bits` (in order, one process set's).
// Appends to `out` the responses fuse() would make of copies of them, each
// with its bits in cache_bits; only the entries are copied.
template <typename At>
void fuse_cached(const std::vector<uint32_t>& bits, const At& at,
                 uint64_t threshold, int32_t set_size,
                 std::vector<Response>& out);

// What fuse_cached needs of fuse()'s rules.
bool fusable(const Response& response);
bool same_fusion_key(const Response& a, const Response& b);
// `from`'s fields but its entries, cache bits and reducer (the planner
// chooses one per fused response).
void copy_header(const Response& from, Response& to);

template <typename At>
void fuse_cached(const std::vector<uint32_t>& bits, const At& at,
                 uint64_t threshold, int32_t set_size,
                 std::vector<Response>& out) {
  const size_t first = out.size();
  // Per output response from `first` on: its first cached response (the
  // fusion key) and its bytes so far. Small: one per kind of response.
  thread_local std::vector<std::pair<const Response*, uint64_t>> groups;
  groups.clear();
  for (uint32_t bit : bits) {
    const Response& cached = at(bit);
    const uint64_t bytes = response_bytes(cached, set_size);
    size_t into = groups.size();
    if (fusable(cached) && threshold > 0) {
      for (size_t i = 0; i < groups.size(); ++i) {
        if (fusable(*groups[i].first) &&
            same_fusion_key(*groups[i].first, cached) &&
            groups[i].second + bytes <= threshold) {
          into = i;
          break;
        }
      }
    }
    if (into == groups.size()) {
      groups.emplace_back(&cached, 0);
      out.emplace_back();
      copy_header(cached, out.back());
    }
    Response& r = out[first + into];
    r.entries.push_back(cached.entries[0]);
    r.cache_bits.push_back(bit);
    groups[into].second += bytes;
  }
}

}  // namespace hvd::runtime
