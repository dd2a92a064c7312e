// One enqueued op on this rank, from hvd_enqueue until its handle is done:
// the caller's op checked and copied (the caller's arrays are valid only
// during the call), and the request it submits for negotiation.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "horovod/horovod.h"
#include "runtime/adapters.h"
#include "runtime/handle.h"
#include "runtime/messages.h"
#include "runtime/tensor_view.h"

namespace hvd::runtime {

class FlightRing;
class OpTable;

// Where an op is on this rank, from hvd_enqueue until its handle is done
// (its process set's table then releases and frees it, op_table.h). The
// moves PendingOp::move_to allows:
//
//   kWaitingForInputs -> kNegotiating -> kAwaitingCacheBits
//   kAwaitingCacheBits -> kNegotiating (the cache no longer has it)
//   kNegotiating, kAwaitingCacheBits -> kQueued -> kRunning
//   kNegotiating, kAwaitingCacheBits -> kRunning (a response runs at once)
//   any state but kDone -> kDone (finished, failed or refused)
enum class OpState {
  kWaitingForInputs,   // enqueued; its adapter or ready event says not yet
  kNegotiating,        // its request goes to the coordinator
  kAwaitingCacheBits,  // offered by its response cache bit each round
  kQueued,             // a response for it waits in the executor's queue
  kRunning,            // the executor runs its response
  kDone,               // its handle is finished
};

const char* state_name(OpState state);

struct PendingOp {
  hvd_handle_s* handle = nullptr;
  Request request;  // collective, name, set, dtype, shapes, op, root...
  std::vector<TensorView> inputs;
  // allreduce, broadcast, reducescatter: where results go (the inputs when
  // in place); allgather, alltoall: empty until allocated.
  std::vector<TensorView> outputs;
  hvd_done_fn done = nullptr;
  void* user = nullptr;
  hvd_adapter_s* adapter = nullptr;
  void* adapter_op = nullptr;
  hvd_event ready_event = nullptr;
  hvd_stream stream = nullptr;  // where device memory is copied (staging)
  // When it entered negotiation on this rank.
  std::chrono::steady_clock::time_point negotiating_since{};
  // Its entry in the flight recorder (flight_recorder.h), when recorded.
  FlightRing* flight_ring = nullptr;
  uint64_t flight_seq = 0;
  // Its owner: its process set's table, from enqueue to completion.
  OpTable* table = nullptr;

  // A queued op is left to run when its process set is removed.
  OpState state() const { return state_; }
  // The one place an op changes state. Throws hvd::Error HVD_ERR_INTERNAL
  // naming the op and both states for a move the lifecycle has not (a
  // bug); a move to the state it is in changes nothing.
  void move_to(OpState to);

  const std::string& name() const { return request.name; }
  hvd_collective collective() const { return request.collective; }
  // "allreduce 'grad'", for messages.
  std::string describe() const;

 private:
  OpState state_ = OpState::kWaitingForInputs;
};

// `message` prefixed with "<collective> '<name>': " unless it starts so.
std::string prefixed(const PendingOp& op, const std::string& message);

// Checks `op` for a set of `set_size` ranks in which this process has rank
// `set_rank`, and copies it. `barrier_name` names a barrier or join that
// came without a name. Throws hvd::Error HVD_ERR_INVALID_ARGUMENT (or
// HVD_ERR_UNSUPPORTED) with a message naming the op and what is wrong.
PendingOp make_pending_op(const hvd_op& op, int32_t set_size, int32_t set_rank,
                          const std::string& barrier_name);

// Rows of the first dimension that land on each rank of a reducescatter of
// `rows` rows over `set_size` ranks (the first rows % size ranks get one
// more).
std::vector<int64_t> reducescatter_rows(int64_t rows, int32_t set_size);

}  // namespace hvd::runtime
