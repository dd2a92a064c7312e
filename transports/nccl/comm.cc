#include "comm.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "cuda.h"
#include "horovod_plugin/boundary.h"
#include "transport.h"

namespace hvd_nccl {

using hvd_plugin::fail;
using Clock = std::chrono::steady_clock;

std::string nccl_error_text(ncclResult_t result) {
  std::string text = ncclGetErrorString(result);
  switch (result) {
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError: " + text;
    case ncclSystemError:
      return "ncclSystemError: " + text;
    case ncclInternalError:
      return "ncclInternalError: " + text;
    case ncclInvalidArgument:
      return "ncclInvalidArgument: " + text;
    case ncclInvalidUsage:
      return "ncclInvalidUsage: " + text;
    case ncclRemoteError:
      return "ncclRemoteError: " + text;
    default:
      return text;
  }
}

namespace {

// What a failed NCCL call means for the core: a remote error or a system
// (network) error is a peer's failure; the rest are this rank's, a misuse
// or this process's NCCL or CUDA failing (HVD_ERR_ABORTED: its own side).
hvd_status status_of(ncclResult_t result) {
  switch (result) {
    case ncclRemoteError:
    case ncclSystemError:
      return HVD_ERR_PEER_FAILED;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return HVD_ERR_INVALID_ARGUMENT;
    default:
      return HVD_ERR_ABORTED;
  }
}

std::vector<char> new_unique_id() {
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) {
    fail(status_of(r), "nccl: ncclGetUniqueId: " + nccl_error_text(r));
  }
  return std::vector<char>(id.internal, id.internal + sizeof(id.internal));
}

}  // namespace

Comm::Comm(Transport& transport, const hvd_team& team, std::string key)
    : transport_(transport),
      rank_(team.rank),
      world_ranks_(team.world_ranks, team.world_ranks + team.size),
      process_set_(team.process_set),
      exchange_(transport.host(), team.rank, team.world_ranks[0],
                std::move(key), new_unique_id),
      created_(Clock::now()) {
  transport_.comms().add(this);
}

Comm::~Comm() {
  transport_.comms().remove(this);
  std::lock_guard<std::mutex> lock(mu_);
  cudaSetDevice(transport_.device());
  if (own_stream_ != nullptr) cudaStreamSynchronize(own_stream_);
  if (comm_ != nullptr) {
    // Finalize flushes what is queued; a communicator that will not finish
    // in time is aborted instead.
    ncclResult_t state = ncclCommFinalize(comm_);
    auto deadline = Clock::now() + transport_.options().timeout;
    while ((state == ncclSuccess || state == ncclInProgress) &&
           Clock::now() < deadline) {
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
      if (state != ncclInProgress) break;
    }
    if (state == ncclSuccess) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
    comm_ = nullptr;
  }
  if (barrier_buffer_ != nullptr) cudaFree(barrier_buffer_);
  if (own_stream_ != nullptr) cudaStreamDestroy(own_stream_);
  for (Request* r : live_) {
    if (r->event != nullptr) cudaEventDestroy(r->event);
    delete r;
  }
}

bool Comm::same_team(const hvd_team& team) const {
  return team.rank == rank_ && team.process_set == process_set_ &&
         std::equal(world_ranks_.begin(), world_ranks_.end(), team.world_ranks,
                    team.world_ranks + team.size);
}

hvd_status Comm::step() {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_ != HVD_OK) return hvd_plugin::refuse(failure_, why_);
  if (ready_) return HVD_OK;
  const auto timeout = transport_.options().timeout;
  if (Clock::now() - created_ > timeout) {
    break_comm(HVD_ERR_TIMEOUT, -1,
               "nccl: the communicator of process set " +
                   std::to_string(process_set_) + " was not ready within " +
                   std::to_string(timeout.count()) + " ms");
    return hvd_plugin::refuse(failure_, why_);
  }
  if (!initialising_) {
    if (exchange_.step() == HVD_AGAIN) return HVD_AGAIN;
    ncclUniqueId id;
    std::memcpy(id.internal, exchange_.id().data(), sizeof(id.internal));
    cuda_check(cudaSetDevice(transport_.device()), "cudaSetDevice");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&comm_, size(), id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      break_on(r, "nccl: ncclCommInitRankConfig (" + std::to_string(size()) +
                      " ranks, key " + exchange_.key() +
                      "): " + nccl_error_text(r));
      return hvd_plugin::refuse(failure_, why_);
    }
    initialising_ = true;
  }
  ncclResult_t state = ncclInProgress;
  ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  if (r == ncclSuccess && state == ncclInProgress) return HVD_AGAIN;
  if (r != ncclSuccess || state != ncclSuccess) {
    ncclResult_t bad = r != ncclSuccess ? r : state;
    break_on(bad, "nccl: creating the communicator of process set " +
                      std::to_string(process_set_) + ": " +
                      nccl_error_text(bad));
    return hvd_plugin::refuse(failure_, why_);
  }
  cuda_check(cudaSetDevice(transport_.device()), "cudaSetDevice");
  cuda_check(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags");
  cuda_check(cudaMalloc(&barrier_buffer_, sizeof(float)), "cudaMalloc");
  ready_ = true;
  return HVD_OK;
}

cudaStream_t Comm::resolve(hvd_stream stream) const {
  if (stream == nullptr) return own_stream_;
  const hvd_device_api* dev = transport_.host()->device;
  if (dev == nullptr || !HVD_HAS_FIELD(dev, hvd_device_api, stream_native) ||
      dev->stream_native == nullptr) {
    fail(HVD_ERR_UNSUPPORTED,
         "nccl: the core gives no stream_native (ABI 1.1), so the stream it "
         "passed cannot order NCCL's work");
  }
  return static_cast<cudaStream_t>(dev->stream_native(dev->ctx, stream));
}

hvd_status Comm::post(
    hvd_stream stream, uint64_t bytes,
    const std::function<ncclResult_t(ncclComm_t, cudaStream_t)>& calls,
    Request** out) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!ready_ && failure_ == HVD_OK) {
    fail(HVD_ERR_INVALID_ARGUMENT, "nccl: the communicator is not ready");
  }
  auto* r = new Request;
  r->comm = this;
  r->bytes = bytes;
  r->start = Clock::now();
  live_.insert(r);
  *out = r;
  if (failure_ != HVD_OK) {
    finish(r, failure_, failure_peer_);
    return HVD_OK;
  }
  r->stream = resolve(stream);
  cuda_check(cudaSetDevice(transport_.device()), "cudaSetDevice");
  ncclResult_t res = calls(comm_, r->stream);
  // A non-blocking communicator may still be queueing the work (the first
  // collective connects the peers): wait for it, so that what the caller
  // queues on the stream next comes after it. abort() can get in meanwhile.
  const auto timeout = transport_.options().timeout;
  while (res == ncclInProgress) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    lock.lock();
    if (failure_ != HVD_OK) break;
    ncclResult_t state = ncclInProgress;
    ncclResult_t q = ncclCommGetAsyncError(comm_, &state);
    res = q != ncclSuccess ? q : state;
    if (res == ncclInProgress && Clock::now() - r->start > timeout) {
      break_comm(HVD_ERR_TIMEOUT, -1,
                 "nccl: queueing a collective of process set " +
                     std::to_string(process_set_) + " took over " +
                     std::to_string(timeout.count()) + " ms");
    }
  }
  if (failure_ != HVD_OK) {
    finish(r, failure_, failure_peer_);
  } else if (res == ncclSuccess) {
    record(r);
  } else {
    break_on(res, "nccl: a collective of process set " +
                      std::to_string(process_set_) + ": " +
                      nccl_error_text(res));
    finish(r, failure_, failure_peer_);
  }
  return HVD_OK;
}

void Comm::record(Request* r) {
  cuda_check(cudaEventCreateWithFlags(&r->event, cudaEventDisableTiming),
             "cudaEventCreateWithFlags");
  cuda_check(cudaEventRecord(r->event, r->stream), "cudaEventRecord");
  Waker* waker = transport_.waker();
  waker->ref();
  if (cudaLaunchHostFunc(r->stream, Waker::host_func, waker) != cudaSuccess) {
    waker->unref();
  }
  r->state = Request::State::kRunning;
}

void Comm::finish(Request* r, hvd_status status, int32_t peer) {
  r->state = Request::State::kDone;
  r->result.struct_size = sizeof(r->result);
  r->result.status = status;
  r->result.peer = status == HVD_OK ? -1 : peer;
  r->result.bytes = status == HVD_OK ? r->bytes : 0;
}

void Comm::break_on(ncclResult_t result, const std::string& why) {
  hvd_status status = status_of(result);
  // NCCL does not say which peer failed; its own failures are this rank's.
  break_comm(status, status == HVD_ERR_PEER_FAILED ? -1 : world_ranks_[rank_],
             why);
}

void Comm::break_comm(hvd_status reason, int32_t peer, const std::string& why) {
  if (failure_ == HVD_OK) {
    failure_ = reason;
    failure_peer_ = peer;
    why_ = why;
  }
  if (comm_ != nullptr) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }
}

hvd_status Comm::test(Request* r, int32_t* done, hvd_completion* out) {
  std::lock_guard<std::mutex> lock(mu_);
  *done = 0;
  if (r->state != Request::State::kDone && failure_ != HVD_OK) {
    finish(r, failure_, failure_peer_);
  }
  if (r->state == Request::State::kEnqueuing) {
    ncclResult_t state = ncclInProgress;
    ncclResult_t res = ncclCommGetAsyncError(comm_, &state);
    if (res == ncclSuccess && state == ncclSuccess) {
      record(r);
    } else if (res != ncclSuccess || state != ncclInProgress) {
      ncclResult_t bad = res != ncclSuccess ? res : state;
      break_on(bad, "nccl: " + nccl_error_text(bad));
      finish(r, failure_, failure_peer_);
    }
  }
  if (r->state == Request::State::kRunning) {
    cudaError_t e = cudaEventQuery(r->event);
    if (e == cudaSuccess) {
      finish(r, HVD_OK, -1);
    } else if (e != cudaErrorNotReady) {
      break_comm(HVD_ERR_ABORTED, world_ranks_[rank_],
                 "nccl: cudaEventQuery: " + cuda_error_text(e));
      finish(r, failure_, failure_peer_);
    } else {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        break_on(state, "nccl: " + nccl_error_text(state));
        finish(r, failure_, failure_peer_);
      }
    }
  }
  if (r->state != Request::State::kDone &&
      Clock::now() - r->start > transport_.options().timeout) {
    break_comm(HVD_ERR_TIMEOUT, -1,
               "nccl: a collective of process set " +
                   std::to_string(process_set_) + " ran past " +
                   std::to_string(transport_.options().timeout.count()) +
                   " ms");
    finish(r, failure_, failure_peer_);
  }
  if (r->state != Request::State::kDone) return HVD_OK;
  *done = 1;
  if (out != nullptr) {
    size_t size = out->struct_size != 0 && out->struct_size < sizeof(*out)
                      ? out->struct_size
                      : sizeof(*out);
    hvd_completion c = r->result;
    c.struct_size = size;
    std::memcpy(out, &c, size);
  }
  if (r->event != nullptr) cudaEventDestroy(r->event);
  live_.erase(r);
  delete r;
  return HVD_OK;
}

void Comm::abort(hvd_status reason, int32_t peer) {
  std::lock_guard<std::mutex> lock(mu_);
  break_comm(reason, peer, "nccl: aborted");
}

}  // namespace hvd_nccl
