// The messages of negotiation. Each cycle every rank sends the coordinator
// (world rank 0) a RequestList of the ops that became ready on it; the
// coordinator answers every rank with the same ResponseList, whose order is
// the order in which all ranks execute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "horovod/abi.h"
#include "horovod_plugin/enums.h"

namespace hvd::runtime {

// hvd_add_process_set / hvd_remove_process_set travel as barriers of set 0
// marked so: the members (add) or the id (remove) in shapes[0].
enum class SetChange : int32_t { kNone = 0, kAdd = 1, kRemove = 2 };

// One op as a rank submits it (a grouped op carries all its tensors).
struct Request {
  int32_t process_set = 0;
  std::string name;
  hvd_collective collective = HVD_COLL_ALLREDUCE;
  hvd_dtype dtype = HVD_UINT8;
  hvd_mem_kind mem_kind = HVD_MEM_HOST;
  int32_t device_id = 0;
  hvd_reduce_op op = HVD_OP_SUM;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t root = 0;
  std::vector<std::vector<int64_t>> shapes;  // per tensor
  std::vector<int64_t> splits;               // alltoall: rows to each rank
  // Set when this rank cannot take part (its inputs failed): the op then
  // fails on every rank with this message instead of leaving them waiting.
  hvd_status failure_status = HVD_OK;
  std::string failure;
  SetChange set_change = SetChange::kNone;
};

struct RequestList {
  bool shutdown = false;  // this rank called hvd_shutdown
  bool busy = false;      // this rank's data path still runs responses
  std::vector<Request> requests;
  // Response cache bits (response_cache.h): ops ready here whose cached
  // response still matches, and cached entries an op here no longer
  // matches (its request is in `requests`).
  std::vector<uint64_t> cache_hits;
  std::vector<uint64_t> cache_stale;
};

// One negotiated op inside a response.
struct Entry {
  std::string name;
  std::vector<std::vector<int64_t>> shapes;  // as the lowest submitting rank
  // allgather: [tensor][rank] first dimension of each rank's tensor;
  // alltoall: [rank][peer] rows that rank sends to peer.
  std::vector<std::vector<int64_t>> per_rank;
};

enum class ResponseKind : int32_t {
  kData = 0,     // run the collective over the entries, fused
  kError = 1,    // fail the entries' ops with `error`
  kBarrier = 2,  // every rank arrived: complete the entries' barriers
  kJoin = 3,     // every rank joined: complete each rank's join
};

struct Response {
  ResponseKind kind = ResponseKind::kData;
  int32_t process_set = 0;
  hvd_collective collective = HVD_COLL_ALLREDUCE;
  hvd_dtype dtype = HVD_UINT8;
  hvd_mem_kind mem_kind = HVD_MEM_HOST;
  int32_t device_id = 0;
  hvd_reduce_op op = HVD_OP_SUM;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t root = 0;
  std::string reducer;  // the planner's first choice (data responses)
  hvd_status error_status = HVD_OK;
  std::string error;
  int32_t last_joined = -1;  // kJoin: the set rank that joined last
  SetChange set_change = SetChange::kNone;  // a kBarrier that changes sets
  std::vector<Entry> entries;
  // A data response from the response cache: on the wire only these bits
  // (and process_set, reducer); each rank fills in the rest from its own
  // cache, one entry per bit.
  std::vector<uint32_t> cache_bits;
};

struct ResponseList {
  bool shutdown = false;
  int32_t shutdown_rank = -1;  // the first rank that asked for it
  // Cached entries to erase (some rank found them stale), applied after the
  // cached responses of this list and before its new ones are cached.
  std::vector<uint32_t> cache_erase;
  // Some rank's data path still ran responses: cache bits, which travel
  // behind their data, wait for a round that finds every rank idle.
  bool busy = false;
  // The coordinator's autotuner moved to new parameters: every rank takes
  // them from the cycle after this one.
  bool tuned = false;
  uint64_t fusion_threshold = 0;
  int64_t cycle_time_ns = 0;
  std::string reducer;  // preferred where it can run; "": the planner's
  // The stall inspector's words (world rank 0's), for every rank to log;
  // a failure ends the job on every rank with it.
  std::string stall_warning;
  std::string stall_failure;
  std::vector<Response> responses;
};

void encode(const RequestList& list, std::vector<uint8_t>& out);
RequestList decode_requests(const std::vector<uint8_t>& in);
void encode(const ResponseList& list, std::vector<uint8_t>& out);
ResponseList decode_responses(const std::vector<uint8_t>& in);

using hvd_plugin::collective_name;

// What messages call a request: its collective, or for a set change (a
// barrier on the wire) the C API call that made it.
const char* call_name(const Request& q);

}  // namespace hvd::runtime
