// One NCCL communicator over a team: its unique id agreed through the
// host's bootstrap, created non-blocking (ncclCommInitRankConfig with
// blocking = 0) and polled from comm_create, and the collectives posted on
// it. Each collective is ordered on the stream it is given (the core's
// hvd_stream, through hvd_device_api.stream_native) or on the
// communicator's own; its request ends when an event recorded after it
// completes (a host function then wakes the wait fd). A collective or a
// set-up that runs past the timeout, or an asynchronous NCCL error, aborts
// the communicator (ncclCommAbort): every request on it then fails instead
// of hanging.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "horovod/transport.h"
#include "unique_id.h"

namespace hvd_nccl {

class Transport;

struct Request {
  enum class State { kEnqueuing, kRunning, kDone };
  class Comm* comm = nullptr;
  State state = State::kEnqueuing;
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  std::chrono::steady_clock::time_point start;
  uint64_t bytes = 0;
  hvd_completion result{};
};

class Comm {
 public:
  Comm(Transport& transport, const hvd_team& team, std::string key);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // Drives the set-up: HVD_AGAIN until the communicator is ready.
  hvd_status step();
  bool same_team(const hvd_team& team) const;
  int size() const { return static_cast<int>(world_ranks_.size()); }
  int rank() const { return rank_; }
  void* barrier_buffer() const { return barrier_buffer_; }

  // Issues `calls` (NCCL calls on this comm, in a group if several) on the
  // stream for `stream`, and returns the request that ends after them.
  // Returns once NCCL has queued them there, so later work on the stream is
  // ordered after them.
  hvd_status post(
      hvd_stream stream, uint64_t bytes,
      const std::function<ncclResult_t(ncclComm_t, cudaStream_t)>& calls,
      Request** out);
  hvd_status test(Request* r, int32_t* done, hvd_completion* out);

  // Any thread, idempotent.
  void abort(hvd_status reason, int32_t peer);

 private:
  cudaStream_t resolve(hvd_stream stream) const;
  void record(Request* r);
  // Under mu_: aborts the NCCL communicator and remembers why.
  void break_comm(hvd_status reason, int32_t peer, const std::string& why);
  // The same for NCCL's `result`, naming this rank unless a peer failed.
  void break_on(ncclResult_t result, const std::string& why);
  void finish(Request* r, hvd_status status, int32_t peer);

  Transport& transport_;
  const int rank_;
  const std::vector<int32_t> world_ranks_;
  const int32_t process_set_;
  UniqueIdExchange exchange_;
  std::chrono::steady_clock::time_point created_;

  std::mutex mu_;
  ncclComm_t comm_ = nullptr;
  bool initialising_ = false;
  bool ready_ = false;
  cudaStream_t own_stream_ = nullptr;
  void* barrier_buffer_ = nullptr;
  hvd_status failure_ = HVD_OK;
  int32_t failure_peer_ = -1;
  std::string why_;
  std::unordered_set<Request*> live_;
};

// "ncclRemoteError: remote process exited or there was a network error".
std::string nccl_error_text(ncclResult_t result);

}  // namespace hvd_nccl
