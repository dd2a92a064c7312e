#include "transport.h"

#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "comm.h"
#include "common/host_access.h"
#include "connection.h"
#include "horovod_plugin/boundary.h"
#include "names.h"
#include "unix_socket.h"
#include "wake_socket.h"

namespace hvd_shm {

using hvd_plugin::fail;
using hvd_plugin::fail_errno;
using hvd_plugin::refuse;

namespace {

// Passes with nothing to do between two looks at the sockets (a peer that
// is gone); wait_arm() always looks.
constexpr uint32_t kEventCheckInterval = 256;

// How long after a collective last passed a sync the core polls on instead
// of sleeping (a sleep and its wake-up cost some 30 us).
constexpr std::chrono::microseconds kCollectiveSpin{50};

// How long a collective polls before it sleeps when the one before it had
// to sleep (Comm::patient): longer than a wake-up takes on a busy host.
constexpr std::chrono::microseconds kPatientSpin{500};

// Looks at a collective's peers within one test() (about 1 us in all).
constexpr uint32_t kTestSpins = 64;

hvd_status check_info(const hvd_conn_info* info) {
  if (info == nullptr ||
      info->struct_size < HVD_STRUCT_SIZE(hvd_conn_info, epoch)) {
    fail(HVD_ERR_INVALID_ARGUMENT, "hvd_conn_info missing or too small");
  }
  return HVD_OK;
}

void drain(int fd) {
  uint64_t value;
  ssize_t n = ::read(fd, &value, sizeof(value));
  (void)n;  // EAGAIN: nothing to drain
}

}  // namespace

Transport::Transport(const hvd_host* host)
    : host_(host), options_(read_options(host)) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) fail_errno("epoll_create1");
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    int err = errno;
    ::close(epoll_fd_);
    errno = err;
    fail_errno("eventfd");
  }
  watch(wake_fd_, &wake_source_);
  hvd_transport_common::log(
      host_, HVD_LOG_DEBUG,
      "shm: rings of " + std::to_string(options_.ring_bytes) +
          " bytes, up to " + std::to_string(options_.max_requests) +
          " requests per connection, names " + name_prefix() + "-*");
}

Transport::~Transport() {
  for (Comm* c : comms_) delete c;
  for (Comm* c : joining_) delete c;
  for (Connection* c : connections_) delete c;
  for (Listener* l : listeners_) {
    ::close(l->fd);
    delete l;
  }
  for (MemoryRegion* r : regions_) delete r;
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void Transport::properties(hvd_transport_properties* props) const {
  hvd_transport_properties p{};
  p.struct_size = sizeof(p);
  p.mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);
  p.flags = HVD_TRANSPORT_INTRA_HOST | HVD_TRANSPORT_ONE_SIDED |
            HVD_TRANSPORT_GLOBAL_MR | HVD_TRANSPORT_NATIVE_COLLECTIVES;
  p.tag_bits = 64;
  p.max_requests = options_.max_requests;
  p.max_message_bytes = SIZE_MAX;
  // Ring transfers run at about a memory copy's speed (some 10 GB/s for
  // 64 MiB messages on the machines this was measured on); a small message
  // takes about a microsecond one way when both ranks are running.
  p.bandwidth_gbps = 80.0;
  p.latency_us = 1.0;
  p.handle_bytes = sizeof(Handle);
  size_t room = props->struct_size != 0 ? props->struct_size : sizeof(p);
  size_t n = std::min(room, sizeof(p));
  p.struct_size = n;
  std::memcpy(props, &p, n);
}

// ---- connection set-up -----------------------------------------------------

hvd_status Transport::listen(void* handle, Listener** out) {
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "shm: the transport was aborted");
  }
  auto listener = std::make_unique<Listener>();
  listener->transport = this;
  listener->name = next_name('l').substr(1);
  listener->fd = listen_socket(listener->name);
  Handle h{};
  h.magic = kHandleMagic;
  h.version = kProtocolVersion;
  h.pid = static_cast<uint32_t>(getpid());
  std::snprintf(h.boot_id, sizeof(h.boot_id), "%s", boot_id().c_str());
  std::snprintf(h.socket_name, sizeof(h.socket_name), "%s",
                listener->name.c_str());
  try {
    watch(listener->fd, &listener->source);
  } catch (...) {
    ::close(listener->fd);
    throw;
  }
  std::memcpy(handle, &h, sizeof(h));
  listeners_.insert(listener.get());
  *out = listener.release();
  return HVD_OK;
}

hvd_status Transport::accept(Listener* listener, const hvd_conn_info* info,
                             Connection** out) {
  check_info(info);
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "shm: the transport was aborted");
  }
  int fd = accept_socket(listener->fd);
  if (fd < 0) return HVD_AGAIN;
  std::unique_ptr<Connection> conn;
  try {
    conn = std::make_unique<Connection>(*this, *info, 1);
  } catch (...) {
    ::close(fd);
    throw;
  }
  conn->start_accept(fd);
  connections_.insert(conn.get());
  *out = conn.release();
  return HVD_OK;
}

hvd_status Transport::connect(const void* handle, const hvd_conn_info* info,
                              Connection** out) {
  check_info(info);
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "shm: the transport was aborted");
  }
  Handle h{};
  std::memcpy(&h, handle, sizeof(h));
  if (h.magic != kHandleMagic || h.version != kProtocolVersion ||
      strnlen(h.socket_name, sizeof(h.socket_name)) == sizeof(h.socket_name)) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "shm: connect: not a listen handle of the shm transport");
  }
  if (strncmp(h.boot_id, boot_id().c_str(), sizeof(h.boot_id)) != 0) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "shm: connect to rank " + std::to_string(info->peer_rank) +
                      ": it is on another host (shm reaches only ranks of "
                      "this host)");
  }
  auto conn = std::make_unique<Connection>(*this, *info, 0);
  conn->start_connect(h);
  connections_.insert(conn.get());
  *out = conn.release();
  return HVD_OK;
}

void Transport::close_listener(Listener* listener) {
  listeners_.erase(listener);
  unwatch(listener->fd);
  ::close(listener->fd);
  delete listener;
}

void Transport::close_connection(Connection* conn) {
  conn->shut_down();
  progressing_.erase(
      std::remove(progressing_.begin(), progressing_.end(), conn),
      progressing_.end());
  connections_.erase(conn);
  delete conn;
}

void Transport::established(Connection* conn) { progressing_.push_back(conn); }

void Transport::watch(int fd, EventSource* source) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = source;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    fail_errno("epoll_ctl(ADD)");
  }
}

void Transport::unwatch(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

// ---- progress and waiting --------------------------------------------------

bool Transport::progress_collectives() {
  bool moved = false;
  for (Comm* c : comms_) moved = c->progress() || moved;
  return moved;
}

bool Transport::progress() {
  aborted();
  if (armed_) disarm();
  bool moved = progress_collectives();
  for (size_t i = 0; i < progressing_.size(); ++i) {
    moved = progressing_[i]->progress() || moved;
  }
  if (moved) {
    idle_passes_ = 0;
  } else if (++idle_passes_ >= kEventCheckInterval) {
    idle_passes_ = 0;
    poll_events();
  }
  prune();
  return moved;
}

void Transport::prune() {
  progressing_.erase(std::remove_if(progressing_.begin(), progressing_.end(),
                                    [](Connection* c) { return !c->usable(); }),
                     progressing_.end());
}

void Transport::poll_events() {
  epoll_event events[32];
  int n = epoll_wait(epoll_fd_, events, 32, 0);
  for (int i = 0; i < n; ++i) {
    auto* source = static_cast<EventSource*>(events[i].data.ptr);
    if (source->kind == EventSource::kWake) {
      drain(wake_fd_);
    } else if (source->kind == EventSource::kCommWake) {
      comm_wake_->drain();
    } else if (source->kind == EventSource::kConnection) {
      static_cast<Connection*>(source->owner)->on_socket_event();
    }
  }
  prune();
}

hvd_status Transport::test(Request* req, int32_t* done, hvd_completion* out) {
  // A collective moves on the shared segment alone: the connections are
  // looked at only while it waits.
  if (!req->complete && req->kind == RequestKind::kCollective) {
    aborted();
    if (armed_) disarm();
    Comm* comm = req->comm;
    progress_collectives();
    // The peers' steps are often a few ns away: look again for a moment
    // before the core's loop takes over, unless ranks outnumber processors.
    for (uint32_t i = 0; i < kTestSpins && !req->complete && comm != nullptr &&
                         !comm->oversubscribed();
         ++i) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      comm->progress();
    }
  }
  if (!req->complete) progress();
  *done = requests_.reap(req, out) ? 1 : 0;
  return HVD_OK;
}

hvd_status Transport::wait_arm() {
  // The wake fd is drained before anything is looked at: a wake written
  // after this point keeps the fd readable, so no wake-up is lost.
  drain(wake_fd_);
  aborted();
  bool moved = progress();
  poll_events();
  bool finished = requests_.finished_since_last_call();
  if (moved || finished) return HVD_AGAIN;
  const auto now = std::chrono::steady_clock::now();
  for (Comm* c : comms_) {
    if (c->moving(now, kCollectiveSpin) || c->patient(now, kPatientSpin)) {
      // Polling on costs less than a wake-up; where members outnumber the
      // processors, give the processor away meanwhile.
      if (c->oversubscribed()) sched_yield();
      return HVD_AGAIN;
    }
  }
  for (Comm* c : comms_) {
    if (c->arm()) {
      disarm();
      return HVD_AGAIN;
    }
  }
  for (Connection* c : progressing_) c->set_sleeping(true);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (Connection* c : progressing_) {
    if (c->work_ready()) {
      disarm();
      return HVD_AGAIN;
    }
  }
  armed_ = true;
  return HVD_OK;
}

void Transport::disarm() {
  for (Comm* c : comms_) c->disarm();
  for (Connection* c : progressing_) c->set_sleeping(false);
  armed_ = false;
}

// ---- abort -----------------------------------------------------------------

void Transport::abort(hvd_status reason, int32_t peer) {
  abort_.trip(reason, peer);
  wake_self();
}

void Transport::wake_self() {
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  (void)n;
}

hvd_status Transport::aborted() {
  return abort_.apply(
      [this](hvd_status reason, int32_t peer) { apply_abort(reason, peer); });
}

void Transport::apply_abort(hvd_status reason, int32_t peer) {
  std::string why = hvd_plugin::abort_text(reason, peer);
  for (Connection* c : connections_) c->fail(reason, peer, why);
  for (Comm* c : comms_) {
    c->abort(reason, peer);
    c->progress();
  }
  for (Comm* c : joining_) c->abort(reason, peer);
  if (armed_) disarm();
  prune();
}

// ---- collectives communicators ---------------------------------------------

hvd_status Transport::comm_create(const hvd_team& team, Comm** out) {
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "shm: the transport was aborted");
  }
  if (!HVD_HAS_FIELD(host_, hvd_host, device) || host_->device == nullptr ||
      host_->device->reduce == nullptr) {
    return refuse(HVD_ERR_UNSUPPORTED,
                  "shm: native collectives need the host's reduction kernels "
                  "(the host table has no device layer)");
  }
  std::vector<int32_t> members(team.world_ranks, team.world_ranks + team.size);
  Comm* comm = nullptr;
  for (Comm* c : joining_) {
    if (c->process_set() == team.process_set && c->members() == members) {
      comm = c;
    }
  }
  if (comm == nullptr) {
    // Members create a process set's communicators in the same order, so
    // the count names the same segment on each.
    uint32_t n = comms_per_set_[team.process_set]++;
    std::string key = "shm.coll." + std::to_string(team.process_set) + "." +
                      std::to_string(team.epoch) + "." + std::to_string(n);
    joining_.push_back(new Comm(*this, team, key));
    comm = joining_.back();
  }
  hvd_status s;
  try {
    s = comm->create();
  } catch (...) {
    joining_.erase(std::find(joining_.begin(), joining_.end(), comm));
    delete comm;
    throw;
  }
  if (s == HVD_AGAIN) return s;
  joining_.erase(std::find(joining_.begin(), joining_.end(), comm));
  if (s != HVD_OK) {
    delete comm;
    return s;
  }
  comms_.push_back(comm);
  *out = comm;
  return HVD_OK;
}

void Transport::comm_destroy(Comm* comm) {
  comms_.erase(std::remove(comms_.begin(), comms_.end(), comm), comms_.end());
  delete comm;
}

WakeSocket& Transport::wake_socket() {
  if (!comm_wake_) {
    auto socket = std::make_unique<WakeSocket>();
    watch(socket->fd(), &comm_wake_source_);
    comm_wake_ = std::move(socket);
  }
  return *comm_wake_;
}

// ---- requests --------------------------------------------------------------

Request* Transport::new_request(RequestKind kind, Connection* conn) {
  Request* r = requests_.take();
  r->kind = kind;
  r->transport = this;
  r->conn = conn;
  return r;
}

void Transport::finish(Request* req, hvd_status status, int32_t peer,
                       uint64_t bytes) {
  req->conn = nullptr;
  requests_.finish(req, status, peer, bytes);
}

}  // namespace hvd_shm
