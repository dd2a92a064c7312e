#include "transport.h"

#include <sched.h>

#include <climits>
#include <cstring>

#include "common/host_access.h"
#include "horovod_plugin/boundary.h"

namespace hvd_mpi {
namespace {

using hvd_plugin::fail;
using hvd_plugin::refuse;

constexpr uint32_t kHandleMagic = 0x4d504948;  // "MPIH"

struct Handle {
  uint32_t magic;
  int32_t mpi_rank;
  uint32_t listener;
  uint32_t reserved;
};

// A truncation is the sender's; a failed process (ULFM's class, where MPI
// has it) is the peer's; anything else MPI returns is this process's MPI
// failing (HVD_ERR_ABORTED: this side's own).
hvd_status status_of_mpi_error(int code) {
  int error_class = MPI_ERR_OTHER;
  MPI_Error_class(code, &error_class);
  if (error_class == MPI_ERR_TRUNCATE) return HVD_ERR_TRUNCATED;
#ifdef MPIX_ERR_PROC_FAILED
  if (error_class == MPIX_ERR_PROC_FAILED) return HVD_ERR_PEER_FAILED;
#endif
  return HVD_ERR_ABORTED;
}

}  // namespace

void Connection::deliver(const Control& message, int) {
  if (state != State::kConnecting) return;
  if (message.kind == Control::kWelcome && message.epoch == epoch) {
    peer_channel = message.channel;
    peer_rank = message.rank;
    state = State::kReady;
    return;
  }
  state = State::kFailed;
  failure = message.kind == Control::kWelcome ? HVD_ERR_EPOCH_MISMATCH
                                              : message.reason;
  failure_text = failure == HVD_ERR_EPOCH_MISMATCH
                     ? "mpi: rank at MPI rank " + std::to_string(peer_mpi) +
                           " serves epoch " + std::to_string(message.epoch) +
                           ", this connection is of epoch " +
                           std::to_string(epoch)
                     : "mpi: MPI rank " + std::to_string(peer_mpi) +
                           " refused the connection (its listener is closed)";
}

Transport::Transport(const hvd_host* host)
    : host_(host), options_(read_options(host)), library_(Library::get(host)) {}

Transport::~Transport() {
  for (auto& listener : listeners_) {
    if (listener->id) library_.close_listener(listener->id);
  }
  for (auto& conn : connections_) {
    if (!conn->closed) library_.close_channel(conn->channel);
  }
  // Requests nobody waited for: MPI must not write into buffers whose owner
  // has gone, so receives are cancelled; sends and collectives run out.
  for (auto& req : requests_) {
    if (req->mpi != MPI_REQUEST_NULL && req->kind == Request::Kind::kRecv) {
      MPI_Cancel(&req->mpi);
    }
    if (req->mpi != MPI_REQUEST_NULL && req->kind != Request::Kind::kCollective)
      MPI_Request_free(&req->mpi);
  }
}

void Transport::properties(hvd_transport_properties* props) const {
  hvd_transport_properties p{};
  p.struct_size = sizeof(p);
  p.mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);
  // MPI moves data only inside MPI calls: the core calls progress() while
  // it waits for anything, so a peer's message is never left half-done.
  p.flags = HVD_TRANSPORT_NATIVE_COLLECTIVES | HVD_TRANSPORT_NEEDS_PROGRESS;
  // The MPI library may run threads of its own (runtime, PMIx, progress).
  p.flags |= HVD_TRANSPORT_OWN_THREADS;
  p.tag_bits = library_.core_tag_bits();
  p.max_requests = options_.max_requests;
  p.max_message_bytes = uint64_t{1} << 30;  // MPI counts are ints
  p.bandwidth_gbps = 10.0;
  p.latency_us = 2.0;
  p.handle_bytes = sizeof(Handle);
  size_t room = props->struct_size;
  std::memcpy(props, &p, std::min(room, sizeof(p)));
  props->struct_size = room;
}

hvd_status Transport::listen(void* handle, Listener** out) {
  auto listener = std::make_unique<Listener>();
  listener->transport = this;
  listener->id = library_.open_listener(listener.get());
  Handle h{kHandleMagic, library_.rank(), listener->id, 0};
  std::memcpy(handle, &h, sizeof h);
  *out = listener.get();
  listeners_.push_back(std::move(listener));
  return HVD_OK;
}

hvd_status Transport::accept(Listener* listener, const hvd_conn_info* info,
                             Connection** out) {
  if (info == nullptr)
    fail(HVD_ERR_INVALID_ARGUMENT, "mpi: accept: info is NULL");
  library_.poll();
  if (listener->hellos.empty()) return HVD_AGAIN;
  Listener::Hello hello = listener->hellos.front();
  listener->hellos.pop_front();
  auto conn = std::make_unique<Connection>();
  conn->transport = this;
  conn->epoch = info->epoch;
  conn->peer_mpi = hello.source;
  conn->peer_rank = hello.message.rank;
  conn->peer_channel = hello.message.channel;
  conn->channel = library_.open_channel(conn.get());
  Control reply{};
  reply.to = hello.message.channel;
  reply.channel = conn->channel;
  reply.rank = info->self_rank;
  reply.epoch = info->epoch;
  if (hello.message.epoch != info->epoch) {
    reply.kind = Control::kReject;
    reply.reason = HVD_ERR_EPOCH_MISMATCH;
    conn->state = Connection::State::kFailed;
    conn->failure = HVD_ERR_EPOCH_MISMATCH;
    conn->failure_text =
        "mpi: rank " + std::to_string(hello.message.rank) +
        " connected with epoch " + std::to_string(hello.message.epoch) +
        ", this listener serves epoch " + std::to_string(info->epoch);
  } else {
    reply.kind = Control::kWelcome;
    conn->state = Connection::State::kReady;
  }
  library_.send_control(reply, hello.source);
  *out = conn.get();
  connections_.push_back(std::move(conn));
  return HVD_OK;
}

hvd_status Transport::connect(const void* handle, const hvd_conn_info* info,
                              Connection** out) {
  if (info == nullptr)
    fail(HVD_ERR_INVALID_ARGUMENT, "mpi: connect: info is NULL");
  Handle h;
  std::memcpy(&h, handle, sizeof h);
  if (h.magic != kHandleMagic || h.mpi_rank < 0 ||
      h.mpi_rank >= library_.size()) {
    fail(HVD_ERR_INVALID_ARGUMENT,
         "mpi: connect: not a listen handle of this MPI job");
  }
  auto conn = std::make_unique<Connection>();
  conn->transport = this;
  conn->epoch = info->epoch;
  conn->peer_mpi = h.mpi_rank;
  conn->peer_rank = info->peer_rank;
  conn->channel = library_.open_channel(conn.get());
  Control hello{};
  hello.kind = Control::kHello;
  hello.to = h.listener;
  hello.channel = conn->channel;
  hello.rank = info->self_rank;
  hello.epoch = info->epoch;
  library_.send_control(hello, h.mpi_rank);
  *out = conn.get();
  connections_.push_back(std::move(conn));
  return HVD_OK;
}

void Transport::close_listener(Listener* listener) {
  library_.close_listener(listener->id);
  listener->id = 0;
}

void Transport::close_connection(Connection* conn) {
  if (conn->closed) return;
  library_.close_channel(conn->channel);
  conn->closed = true;
}

hvd_status Transport::conn_test(Connection* conn) {
  library_.poll();
  switch (conn->state) {
    case Connection::State::kConnecting:
      return HVD_AGAIN;
    case Connection::State::kReady:
      return HVD_OK;
    case Connection::State::kFailed:
      break;
  }
  return refuse(conn->failure, conn->failure_text);
}

hvd_status Transport::isend(Connection* c, const void* buf, size_t bytes,
                            uint64_t tag, Request** out) {
  if (hvd_status a = aborted(); a != HVD_OK)
    return refuse(a, "mpi: isend after abort");
  if (c->state != Connection::State::kReady || c->closed)
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "mpi: isend on a connection "
                  "that is not established");
  if (bytes > INT_MAX)
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "mpi: isend of " + std::to_string(bytes) +
                      " bytes exceeds max_message_bytes");
  if (c->sends >= options_.max_requests) return HVD_AGAIN;
  Request* r = take_request(Request::Kind::kSend);
  r->conn = c;
  r->bytes = bytes;
  int rc = MPI_Isend(buf, static_cast<int>(bytes), MPI_BYTE, c->peer_mpi,
                     library_.mpi_tag(c->peer_channel, tag), library_.comm(),
                     &r->mpi);
  if (rc != MPI_SUCCESS) {
    give_back(r);
    return refuse(failed_here_or_there(rc), mpi_error_text("MPI_Isend", rc));
  }
  ++c->sends;
  *out = r;
  return HVD_OK;
}

hvd_status Transport::irecv(Connection* c, void* buf, size_t bytes,
                            uint64_t tag, Request** out) {
  if (hvd_status a = aborted(); a != HVD_OK)
    return refuse(a, "mpi: irecv after abort");
  if (c->state != Connection::State::kReady || c->closed)
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "mpi: irecv on a connection "
                  "that is not established");
  if (bytes > INT_MAX)
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "mpi: irecv of " + std::to_string(bytes) +
                      " bytes exceeds max_message_bytes");
  if (c->recvs >= options_.max_requests) return HVD_AGAIN;
  Request* r = take_request(Request::Kind::kRecv);
  r->conn = c;
  r->bytes = bytes;
  int rc =
      MPI_Irecv(buf, static_cast<int>(bytes), MPI_BYTE, c->peer_mpi,
                library_.mpi_tag(c->channel, tag), library_.comm(), &r->mpi);
  if (rc != MPI_SUCCESS) {
    give_back(r);
    return refuse(failed_here_or_there(rc), mpi_error_text("MPI_Irecv", rc));
  }
  ++c->recvs;
  *out = r;
  return HVD_OK;
}

int32_t Transport::rank() const {
  return hvd_transport_common::world_rank(host_);
}

hvd_status Transport::failed_here_or_there(int code) {
  hvd_status status = status_of_mpi_error(code);
  // MPI failed in this process: what follows fails the same way, and names
  // this rank.
  if (status == HVD_ERR_ABORTED) abort(HVD_ERR_ABORTED, rank());
  return status;
}

hvd_status Transport::test(Request* req, int32_t* done, hvd_completion* out) {
  *done = 0;
  // Control messages concern connections only; the core's progress() reads
  // them too, so testing a collective does not.
  if (req->kind != Request::Kind::kCollective) library_.poll();
  hvd_status status = HVD_OK;
  int32_t peer = req->conn ? req->conn->peer_rank : -1;
  uint64_t bytes = req->bytes;
  int32_t abort_peer = -1;
  hvd_status a = aborted(&abort_peer);
  if (a == HVD_OK && req->comm) a = req->comm->abort.reason(&abort_peer);
  if (a != HVD_OK) {
    status = a;
    peer = abort_peer;
    bytes = 0;
    abandon(req);
  } else {
    int flag = 0;
    MPI_Status mpi_status;
    int rc = req->kind == Request::Kind::kCollective
                 ? test_collective(req, &flag, &mpi_status)
                 : MPI_Test(&req->mpi, &flag, &mpi_status);
    if (rc != MPI_SUCCESS) {
      status = failed_here_or_there(rc);
      if (status == HVD_ERR_ABORTED) peer = rank();
      hvd_plugin::set_last_error("mpi: " + mpi_error_text(req->what, rc));
      bytes = 0;
      req->mpi = MPI_REQUEST_NULL;
    } else if (!flag) {
      if (req->kind != Request::Kind::kCollective) return HVD_OK;
      // The clock starts at the first test that finds it unfinished, so a
      // collective that finishes at once never reads it.
      const auto now = std::chrono::steady_clock::now();
      if (req->first_unfinished == std::chrono::steady_clock::time_point{}) {
        req->first_unfinished = now;
      }
      if (now - req->first_unfinished <
          std::chrono::seconds(options_.timeout_seconds)) {
        return HVD_OK;
      }
      status = HVD_ERR_TIMEOUT;
      bytes = 0;
      hvd_plugin::set_last_error(
          std::string("mpi: ") + req->what + " did not finish within " +
          std::to_string(options_.timeout_seconds) +
          " s ([transport.mpi] timeout): a member is gone or stuck");
      abandon(req);
    } else if (req->kind == Request::Kind::kRecv) {
      int count = 0;
      MPI_Get_count(&mpi_status, MPI_BYTE, &count);
      bytes = static_cast<uint64_t>(count);
    }
  }
  if (out) {
    out->struct_size = sizeof(hvd_completion);
    out->status = status;
    out->peer = status == HVD_OK ? -1 : peer;
    out->bytes = bytes;
  }
  if (req->conn) {
    if (req->kind == Request::Kind::kSend) --req->conn->sends;
    if (req->kind == Request::Kind::kRecv) --req->conn->recvs;
  }
  give_back(req);
  *done = 1;
  return HVD_OK;
}

int Transport::test_collective(Request* req, int* flag, MPI_Status* status) {
  // Back to back for kSpin, then yielding the processor between tests (the
  // peer may be waiting for it), until kPatience has passed or an abort
  // arrives.
  constexpr auto kSpin = std::chrono::microseconds(50);
  constexpr auto kPatience = std::chrono::milliseconds(2);
  // A small collective finishes within a few tests; the clock is read
  // only after those.
  constexpr int kTestsBeforeTheClock = 32;
  for (int i = 0; i < kTestsBeforeTheClock; ++i) {
    int rc = MPI_Test(&req->mpi, flag, status);
    if (rc != MPI_SUCCESS || *flag) return rc;
    if (abort_.tripped() || req->comm->abort.tripped()) return rc;
  }
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int rc = MPI_Test(&req->mpi, flag, status);
    if (rc != MPI_SUCCESS || *flag) return rc;
    if (abort_.tripped() || req->comm->abort.tripped()) return rc;
    auto waited = std::chrono::steady_clock::now() - start;
    if (waited >= kPatience) return rc;
    if (waited >= kSpin) sched_yield();
  }
}

Request* Transport::take_request(Request::Kind kind) {
  Request* r = free_;
  if (r) {
    free_ = r->next_free;
  } else {
    requests_.push_back(std::make_unique<Request>());
    r = requests_.back().get();
  }
  r->transport = this;
  r->kind = kind;
  r->what = kind == Request::Kind::kSend ? "MPI_Isend" : "MPI_Irecv";
  r->first_unfinished = {};
  r->next_free = nullptr;
  return r;
}

void Transport::give_back(Request* req) {
  req->conn = nullptr;
  req->comm = nullptr;
  req->mpi = MPI_REQUEST_NULL;
  req->bytes = 0;
  for (auto& c : req->counts) c.clear();
  req->next_free = free_;
  free_ = req;
}

void Transport::abandon(Request* req) {
  if (req->mpi == MPI_REQUEST_NULL) return;
  if (req->kind == Request::Kind::kRecv) MPI_Cancel(&req->mpi);
  // A non-blocking collective can be neither cancelled nor freed; MPI keeps
  // it (and the count arrays it reads) until it ends or the job does.
  if (req->kind != Request::Kind::kCollective) {
    MPI_Request_free(&req->mpi);
  } else {
    for (auto& c : req->counts) {
      if (!c.empty()) abandoned_counts_.push_back(std::move(c));
    }
  }
  req->mpi = MPI_REQUEST_NULL;
}

}  // namespace hvd_mpi
