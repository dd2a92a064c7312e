#include "collectives.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/types.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "common/host_access.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/enums.h"
#include "horovod_plugin/fault_hook.h"
#include "store.h"
#include "transport.h"

namespace hvd_gloo {

using hvd_plugin::fail;
using hvd_plugin::guarded;

namespace {

// How long a failed collective watches the members' connections for the
// one that failed: they see the same peer go, in Gloo's same loop.
constexpr auto kFindCulprit = std::chrono::milliseconds(500);

}  // namespace

Comm::Comm(Transport& transport, const hvd_team& team, std::string key_prefix)
    : transport_(transport),
      rank_(team.rank),
      world_ranks_(team.world_ranks, team.world_ranks + team.size),
      process_set_(team.process_set),
      key_prefix_(std::move(key_prefix)) {
  transport_.comms().add(this);
  thread_ = std::thread([this] { run(); });
}

Comm::~Comm() {
  transport_.comms().remove(this);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (Job& j : jobs_) {
      transport_.complete(j.req, HVD_ERR_SHUT_DOWN, -1, 0);
      transport_.release(j.req);
    }
    jobs_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

hvd_status Comm::ready(std::string* why) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != HVD_OK && state_ != HVD_AGAIN && why != nullptr) *why = why_;
  return state_;
}

bool Comm::same_team(const hvd_team& team) const {
  return team.rank == rank_ && team.process_set == process_set_ &&
         std::equal(world_ranks_.begin(), world_ranks_.end(), team.world_ranks,
                    team.world_ranks + team.size);
}

void Comm::run() {
  const auto timeout = transport_.options().timeout;
  try {
    auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size());
    context->setTimeout(timeout);
    BootstrapStore store(transport_.host(), key_prefix_, world_ranks_, timeout);
    auto device = transport_.device();
    context->connectFullMesh(store, device);
    std::lock_guard<std::mutex> lock(mu_);
    context_ = std::move(context);
    state_ = HVD_OK;
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    why_ = "connecting the full mesh of process set " +
           std::to_string(process_set_) + ": " + e.what();
    state_ = HVD_ERR_PEER_FAILED;
    return;
  }
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      running_ = job.req;
    }
    int32_t peer = -1;
    hvd_status status = call(job.body, &peer);
    std::lock_guard<std::mutex> lock(mu_);
    running_ = nullptr;
    finish(job.req, status, peer, job.bytes);
    transport_.release(job.req);
  }
}

hvd_status Comm::call(const Body& body, int32_t* peer) {
  *peer = -1;
  try {
    body(*context_);
    return HVD_OK;
  } catch (const std::exception& e) {
    std::string what = e.what();
    {
      std::lock_guard<std::mutex> lock(mu_);
      hvd_transport_common::log(
          transport_.host(), failure_ != HVD_OK ? HVD_LOG_DEBUG : HVD_LOG_ERROR,
          "gloo: a collective of process set " + std::to_string(process_set_) +
              " failed: " + what);
      if (failure_ != HVD_OK) return failure_;  // aborted: finish names why
    }
    if (what.find("Timed out") != std::string::npos) return HVD_ERR_TIMEOUT;
    // Gloo does not say which peer failed: the member whose connection to
    // this rank went with it does.
    *peer = transport_.failed_member(world_ranks_, kFindCulprit);
    return HVD_ERR_PEER_FAILED;
  }
}

void Comm::finish(Request* req, hvd_status status, int32_t peer,
                  uint64_t bytes) {
  if (failure_ != HVD_OK) {
    transport_.complete(req, failure_, failure_peer_, 0);
  } else {
    transport_.complete(req, status, peer, bytes);
    if (status != HVD_OK) {
      failure_ = status;
      failure_peer_ = peer;
    }
  }
}

Request* Comm::post(Body body, uint64_t bytes) {
  Request* r = transport_.new_request(nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_ != HVD_OK || state_ != HVD_OK) {
    transport_.complete(r, failure_ != HVD_OK ? failure_ : HVD_ERR_SHUT_DOWN,
                        failure_peer_, 0);
    return r;
  }
  // Held while queued and running: an abort completes it, and the core may
  // then free its own hold before this thread is done with it.
  transport_.hold(r);
  jobs_.push_back(Job{r, std::move(body), bytes});
  cv_.notify_one();
  return r;
}

Request* Comm::allreduce_here(const DirectAllreduce& op, uint32_t tag,
                              uint64_t bytes) {
  const auto timeout = transport_.options().timeout;
  Body body = [this, op, tag, timeout](gloo::rendezvous::Context& ctx) {
    if (!direct_allreduce(ctx, op, tag, timeout, scratch_, waits_)) {
      throw std::runtime_error("interrupted by an abort");
    }
  };
  std::unique_lock<std::mutex> lock(mu_);
  if (failure_ != HVD_OK || state_ != HVD_OK || !jobs_.empty() ||
      running_ != nullptr) {
    lock.unlock();
    return post(std::move(body), bytes);
  }
  lock.unlock();
  // Only the core's thread posts, so nothing is queued meanwhile.
  Request* r = transport_.new_request(nullptr);
  int32_t peer = -1;
  hvd_status status = call(body, &peer);
  lock.lock();
  finish(r, status, peer, bytes);
  return r;
}

void Comm::abort(hvd_status reason, int32_t peer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_ == HVD_OK) {
    failure_ = reason;
    failure_peer_ = peer;
  }
  for (Job& j : jobs_) {
    transport_.complete(j.req, failure_, failure_peer_, 0);
    transport_.release(j.req);
  }
  jobs_.clear();
  if (running_ != nullptr) {
    transport_.complete(running_, failure_, failure_peer_, 0);
  }
  // An allreduce_here stops waiting at once. Closing the pairs makes a
  // running Gloo call fail here and at the peers, and stops Gloo touching
  // its buffers.
  waits_.interrupt();
  if (context_) context_->closeConnections();
}

// ---- the extension's entry points ---------------------------------------

namespace {

template <typename T>
struct Type {
  using type = T;
};

// Calls f(Type<T>{}) with the C++ type Gloo reduces `dtype` as; does nothing
// for a dtype Gloo cannot reduce.
template <typename F>
void with_type(hvd_dtype dtype, F&& f) {
  switch (dtype) {
    case HVD_UINT8:
      return f(Type<uint8_t>{});
    case HVD_INT8:
      return f(Type<int8_t>{});
    case HVD_INT32:
      return f(Type<int32_t>{});
    case HVD_INT64:
      return f(Type<int64_t>{});
    case HVD_FLOAT16:
      return f(Type<gloo::float16>{});
    case HVD_FLOAT32:
      return f(Type<float>{});
    case HVD_FLOAT64:
      return f(Type<double>{});
  }
}

bool native_dtype(hvd_dtype dtype) {
  bool native = false;
  with_type(dtype, [&](auto) { native = true; });
  return native;
}

template <typename T>
gloo::AllreduceOptions::Func reduce_fn(hvd_reduce_op op) {
  switch (op) {
    case HVD_OP_SUM:
      return [](void* c, const void* a, const void* b, size_t n) {
        gloo::sum<T>(c, a, b, n);
      };
    case HVD_OP_PRODUCT:
      return [](void* c, const void* a, const void* b, size_t n) {
        gloo::product<T>(c, a, b, n);
      };
    case HVD_OP_MIN:
      return [](void* c, const void* a, const void* b, size_t n) {
        gloo::min<T>(c, a, b, n);
      };
    case HVD_OP_MAX:
      return [](void* c, const void* a, const void* b, size_t n) {
        gloo::max<T>(c, a, b, n);
      };
  }
  return nullptr;
}

bool native_op(hvd_reduce_op op, hvd_dtype dtype) {
  switch (op) {
    case HVD_OP_SUM:
    case HVD_OP_MIN:
    case HVD_OP_MAX:
      return true;
    case HVD_OP_PRODUCT:
      return dtype != HVD_FLOAT16;  // Gloo has no float16 product
  }
  // AVERAGE: the core passes SUM and scales itself.
  return false;
}

Comm* as_comm(hvd_coll_comm* c) {
  if (c == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "gloo: comm is NULL");
  return reinterpret_cast<Comm*>(c);
}

size_t element_size(hvd_dtype dtype, const char* what) {
  size_t esize = hvd_plugin::dtype_size(dtype);
  if (esize == 0) {
    fail(HVD_ERR_UNSUPPORTED, std::string("gloo: ") + what + " of this dtype");
  }
  return esize;
}

// Element counts -> byte counts, checking that `displs` (may be NULL) lays
// the blocks end to end, which is what Gloo's v-collectives take.
std::vector<int64_t> contiguous_bytes(const size_t* counts,
                                      const size_t* displs, int n, size_t esize,
                                      const char* what) {
  std::vector<int64_t> bytes(n);
  size_t at = 0;
  for (int i = 0; i < n; ++i) {
    if (displs != nullptr && displs[i] != at) {
      fail(HVD_ERR_UNSUPPORTED,
           std::string("gloo: ") + what + " with gaps between blocks");
    }
    bytes[i] = static_cast<int64_t>(counts[i] * esize);
    at += counts[i];
  }
  return bytes;
}

uint64_t total(const std::vector<int64_t>& bytes) {
  uint64_t sum = 0;
  for (int64_t b : bytes) sum += static_cast<uint64_t>(b);
  return sum;
}

// What a collective posts: `run` sets the buffers of Gloo's options and
// calls Gloo; its request completes with `bytes` written here.
template <typename Run>
struct Posting {
  uint64_t bytes;
  Run run;
  // Set where the collective runs on the caller's thread instead.
  std::optional<DirectAllreduce> direct = std::nullopt;
};

// Every collective: checks the comm and the memory, lets `prepare` check
// the arguments (on the caller's thread, before anything is queued) and
// build the Posting, and queues it with a fresh tag (or runs its `direct`
// allreduce here with it). On the comm's thread `run` gets Gloo's Options
// over the comm's context with that tag and the transport's timeout.
template <typename Options, typename Prepare>
hvd_status start(hvd_coll_comm* c, const char* what, hvd_stream stream,
                 hvd_request** req, Prepare&& prepare) {
  return guarded([&] {
    Comm* comm = as_comm(c);
    hvd_plugin::fault::fault_point(comm->transport());
    if (stream != nullptr) {
      fail(HVD_ERR_UNSUPPORTED, std::string("gloo: ") + what +
                                    " moves host memory only (stream given)");
    }
    if (req == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT,
           std::string("gloo: ") + what + ": request is NULL");
    }
    auto posting = prepare(*comm);
    const auto timeout = comm->transport().options().timeout;
    const uint32_t tag = comm->next_tag();
    if (posting.direct) {
      *req = reinterpret_cast<hvd_request*>(
          comm->allreduce_here(*posting.direct, tag, posting.bytes));
      return HVD_OK;
    }
    Comm::Body body = [=, run = std::move(posting.run)](
                          gloo::rendezvous::Context& ctx) {
      Options opts(std::shared_ptr<gloo::Context>(&ctx, [](gloo::Context*) {}));
      opts.setTag(tag);
      opts.setTimeout(timeout);
      run(opts);
    };
    Request* r = comm->post(std::move(body), posting.bytes);
    *req = reinterpret_cast<hvd_request*>(r);
    return HVD_OK;
  });
}

hvd_status comm_create(hvd_transport* t, const hvd_team* team,
                       hvd_coll_comm** out) {
  return guarded([&] {
    if (t == nullptr || team == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "gloo: comm_create: NULL argument");
    }
    auto* transport = reinterpret_cast<Transport*>(t);
    Comm* comm = transport->pending_comm(*team);
    std::string why;
    hvd_status s = comm->ready(&why);
    if (s == HVD_AGAIN) return HVD_AGAIN;
    transport->comms().forget_pending(comm);
    if (s != HVD_OK) {
      delete comm;
      fail(s, "gloo: " + why);
    }
    *out = reinterpret_cast<hvd_coll_comm*>(comm);
    return HVD_OK;
  });
}

hvd_status comm_destroy(hvd_coll_comm* c) {
  return guarded([&] {
    delete as_comm(c);
    return HVD_OK;
  });
}

int32_t supports(hvd_coll_comm*, hvd_collective coll, hvd_dtype dtype,
                 hvd_reduce_op op, hvd_mem_kind mem) {
  if (mem != HVD_MEM_HOST) return 0;
  switch (coll) {
    case HVD_COLL_ALLREDUCE:
      return native_dtype(dtype) && native_op(op, dtype) ? 1 : 0;
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_BROADCAST:
    case HVD_COLL_ALLTOALL:
      return hvd_plugin::dtype_size(dtype) != 0 ? 1 : 0;
    case HVD_COLL_BARRIER:
      return 1;
  }
  return 0;
}

hvd_status allreduce(hvd_coll_comm* c, const void* send, void* recv,
                     size_t count, hvd_dtype dtype, hvd_reduce_op op,
                     hvd_stream stream, hvd_request** req) {
  return start<gloo::AllreduceOptions>(c, "allreduce", stream, req, [&](Comm&) {
    if (!native_dtype(dtype) || !native_op(op, dtype)) {
      fail(HVD_ERR_UNSUPPORTED, "gloo: allreduce of this dtype and op");
    }
    const uint64_t bytes = count * hvd_plugin::dtype_size(dtype);
    std::optional<DirectAllreduce> direct;
    if (direct_allreduce_fits(bytes)) {
      with_type(dtype, [&](auto type) {
        using T = typename decltype(type)::type;
        direct =
            DirectAllreduce{send, recv, count, sizeof(T), reduce_fn<T>(op)};
      });
    }
    return Posting{bytes,
                   [=](gloo::AllreduceOptions& opts) {
                     if (count == 0) return;
                     with_type(dtype, [&](auto type) {
                       using T = typename decltype(type)::type;
                       if (send != recv) {
                         opts.setInput(static_cast<T*>(const_cast<void*>(send)),
                                       count);
                       }
                       opts.setOutput(static_cast<T*>(recv), count);
                       opts.setReduceFunction(reduce_fn<T>(op));
                     });
                     gloo::allreduce(opts);
                   },
                   std::move(direct)};
  });
}

hvd_status allgatherv(hvd_coll_comm* c, const void* send, size_t send_count,
                      void* recv, const size_t* recv_counts,
                      const size_t* recv_displs, hvd_dtype dtype,
                      hvd_stream stream, hvd_request** req) {
  return start<gloo::AllgathervOptions>(
      c, "allgatherv", stream, req, [&](Comm& comm) {
        size_t esize = element_size(dtype, "allgatherv");
        std::vector<int64_t> bytes = contiguous_bytes(
            recv_counts, recv_displs, comm.size(), esize, "allgatherv");
        std::vector<size_t> out(bytes.begin(), bytes.end());
        return Posting{total(bytes), [=](gloo::AllgathervOptions& opts) {
                         opts.setInput(
                             static_cast<uint8_t*>(const_cast<void*>(send)),
                             send_count * esize);
                         opts.setOutput(static_cast<uint8_t*>(recv), out);
                         gloo::allgatherv(opts);
                       }};
      });
}

hvd_status broadcast(hvd_coll_comm* c, void* buf, size_t count, hvd_dtype dtype,
                     int32_t root, hvd_stream stream, hvd_request** req) {
  return start<gloo::BroadcastOptions>(
      c, "broadcast", stream, req, [&](Comm& comm) {
        size_t bytes = count * element_size(dtype, "broadcast");
        if (root < 0 || root >= comm.size()) {
          fail(HVD_ERR_INVALID_ARGUMENT,
               "gloo: broadcast root " + std::to_string(root) +
                   " of a team of " + std::to_string(comm.size()));
        }
        const bool is_root = comm.rank() == root;
        return Posting{bytes, [=](gloo::BroadcastOptions& opts) {
                         if (bytes == 0) return;
                         if (is_root)
                           opts.setInput(static_cast<uint8_t*>(buf), bytes);
                         opts.setOutput(static_cast<uint8_t*>(buf), bytes);
                         opts.setRoot(root);
                         gloo::broadcast(opts);
                       }};
      });
}

hvd_status alltoallv(hvd_coll_comm* c, const void* send,
                     const size_t* send_counts, const size_t* send_displs,
                     void* recv, const size_t* recv_counts,
                     const size_t* recv_displs, hvd_dtype dtype,
                     hvd_stream stream, hvd_request** req) {
  return start<gloo::AlltoallvOptions>(
      c, "alltoallv", stream, req, [&](Comm& comm) {
        size_t esize = element_size(dtype, "alltoallv");
        std::vector<int64_t> in = contiguous_bytes(
            send_counts, send_displs, comm.size(), esize, "alltoallv");
        std::vector<int64_t> out = contiguous_bytes(
            recv_counts, recv_displs, comm.size(), esize, "alltoallv");
        return Posting{
            total(out), [=](gloo::AlltoallvOptions& opts) {
              // Gloo reads its input while it writes its output.
              std::vector<uint8_t> copy;
              const void* from = send;
              if (send == recv) {
                copy.assign(static_cast<const uint8_t*>(send),
                            static_cast<const uint8_t*>(send) + total(in));
                from = copy.data();
              }
              opts.setInput(static_cast<uint8_t*>(const_cast<void*>(from)), in);
              opts.setOutput(static_cast<uint8_t*>(recv), out);
              gloo::alltoallv(opts);
            }};
      });
}

hvd_status barrier(hvd_coll_comm* c, hvd_request** req) {
  return start<gloo::BarrierOptions>(c, "barrier", nullptr, req, [](Comm&) {
    return Posting{0, [](gloo::BarrierOptions& opts) { gloo::barrier(opts); }};
  });
}

hvd_status comm_abort(hvd_coll_comm* c, hvd_status reason, int32_t peer) {
  return guarded([&] {
    as_comm(c)->abort(reason, peer);
    return HVD_OK;
  });
}

}  // namespace

const hvd_transport_collectives kCollectives = {
    .struct_size = HVD_STRUCT_SIZE(hvd_transport_collectives, comm_abort),
    .type = HVD_EXT_TRANSPORT_COLLECTIVES,
    .next = nullptr,
    .comm_create = comm_create,
    .comm_destroy = comm_destroy,
    .supports = supports,
    .allreduce = allreduce,
    .allgatherv = allgatherv,
    .broadcast = broadcast,
    .reducescatter = nullptr,
    .alltoallv = alltoallv,
    .barrier = barrier,
    .comm_abort = comm_abort,
};

}  // namespace hvd_gloo
