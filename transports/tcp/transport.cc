#include "transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/host_access.h"
#include "connection.h"
#include "horovod_plugin/boundary.h"
#include "listener.h"

namespace hvd_tcp {

using hvd_plugin::fail;
using hvd_plugin::fail_errno;
using hvd_plugin::refuse;

namespace {

void check_info(const hvd_conn_info* info) {
  if (info == nullptr ||
      info->struct_size < HVD_STRUCT_SIZE(hvd_conn_info, epoch)) {
    fail(HVD_ERR_INVALID_ARGUMENT, "hvd_conn_info missing or too small");
  }
}

// Estimates where the kernel tells nothing: a 10 Gbit/s link, and the
// one-way latency of a small message through two kernel TCP stacks and a
// switch.
constexpr double kAssumedGbps = 10.0;
constexpr double kAssumedLatencyUs = 25.0;

void drain(int fd) {
  uint64_t value;
  ssize_t n = ::read(fd, &value, sizeof(value));
  (void)n;  // EAGAIN: nothing to drain
}

}  // namespace

Transport::Transport(const hvd_host* host)
    : host_(host),
      options_(read_options(host)),
      scratch_(new uint8_t[kScratchBytes]) {
  // Without a link speed from the kernel: a common data-center NIC.
  bandwidth_gbps_ = link_gbps(options_.interfaces);
  if (bandwidth_gbps_ <= 0) bandwidth_gbps_ = kAssumedGbps;
  for (const std::string& name : options_.interfaces) {
    for (const Address& a : interface_addresses(name)) sources_.push_back(a);
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) fail_errno("epoll_create1");
  abort_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (abort_fd_ < 0) {
    int err = errno;
    ::close(epoll_fd_);
    errno = err;
    fail_errno("eventfd");
  }
  watch(abort_fd_, &abort_source_, EPOLLIN);
  std::string where = "all interfaces";
  if (!options_.interfaces.empty()) {
    where.clear();
    for (const std::string& n : options_.interfaces) {
      where += (where.empty() ? "" : ",") + n;
    }
  }
  hvd_transport_common::log(host_, HVD_LOG_DEBUG,
                            "tcp: " + std::to_string(options_.streams) +
                                " streams per connection, "
                                "split from " +
                                std::to_string(options_.split_threshold) +
                                " bytes, on " + where);
}

Transport::~Transport() {
  if (arrived_.messages > 0) {
    hvd_transport_common::log(
        host_, HVD_LOG_DEBUG,
        "tcp: " + std::to_string(arrived_.early_messages) + " of " +
            std::to_string(arrived_.messages) + " messages (" +
            std::to_string(arrived_.early_bytes) + " of " +
            std::to_string(arrived_.bytes) +
            " bytes) arrived before their receive was posted and were copied "
            "once more");
  }
  for (Listener* l : listeners_) delete l;
  for (Connection* c : connections_) delete c;
  ::close(abort_fd_);
  ::close(epoll_fd_);
}

void Transport::properties(hvd_transport_properties* props) const {
  hvd_transport_properties p{};
  p.struct_size = sizeof(p);
  p.mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);
  p.flags = 0;
  p.tag_bits = 64;
  p.max_requests = options_.max_requests;
  p.max_message_bytes = SIZE_MAX;
  p.bandwidth_gbps = bandwidth_gbps_;
  p.latency_us = kAssumedLatencyUs;
  p.handle_bytes = sizeof(Handle);
  size_t room = props->struct_size != 0 ? props->struct_size : sizeof(p);
  size_t n = std::min(room, sizeof(p));
  p.struct_size = n;
  std::memcpy(props, &p, n);
}

const Address* Transport::source_for(int family) const {
  for (const Address& a : sources_) {
    if (a.family() == family) return &a;
  }
  return nullptr;
}

// ---- connection set-up -----------------------------------------------------

hvd_status Transport::listen(void* handle, Listener** out) {
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "tcp: the transport was aborted");
  }
  auto listener = std::make_unique<Listener>(*this, options_);
  listener->fill_handle(handle);
  listeners_.insert(listener.get());
  *out = listener.release();
  return HVD_OK;
}

hvd_status Transport::accept(Listener* listener, const hvd_conn_info* info,
                             Connection** out) {
  check_info(info);
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "tcp: the transport was aborted");
  }
  Connection* conn = listener->take();
  if (conn == nullptr) return HVD_AGAIN;
  conn->accepted(*info);
  adopt(conn);
  *out = conn;
  return HVD_OK;
}

hvd_status Transport::connect(const void* handle, const hvd_conn_info* info,
                              Connection** out) {
  check_info(info);
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "tcp: the transport was aborted");
  }
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  std::vector<Address> targets;
  if (!read_handle(h, &targets)) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "tcp: connect: not a listen handle of the tcp transport");
  }
  auto conn = std::make_unique<Connection>(*this, *info, std::move(targets));
  connections_.insert(conn.get());
  *out = conn.release();
  return HVD_OK;
}

void Transport::close_listener(Listener* listener) {
  listeners_.erase(listener);
  delete listener;
}

void Transport::close_connection(Connection* conn) {
  conn->shut_down();
  connections_.erase(conn);
  delete conn;
}

void Transport::watch(int fd, EventSource* source, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = source;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    fail_errno("epoll_ctl(ADD)");
  }
}

void Transport::modify(int fd, EventSource* source, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = source;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
    fail_errno("epoll_ctl(MOD)");
  }
}

void Transport::unwatch(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

// ---- progress and waiting --------------------------------------------------

bool Transport::progress() {
  aborted();
  epoll_event events[64];
  int n = epoll_wait(epoll_fd_, events, 64, 0);
  bool moved = false;
  for (int i = 0; i < n; ++i) {
    auto* source = static_cast<EventSource*>(events[i].data.ptr);
    if (source->kind == EventSource::kStream) {
      static_cast<Connection*>(source->owner)
          ->on_event(source->index, events[i].events);
      moved = true;
    }
  }
  return moved;
}

hvd_status Transport::test(Request* req, int32_t* done, hvd_completion* out) {
  if (!req->complete) progress();
  *done = requests_.reap(req, out) ? 1 : 0;
  return HVD_OK;
}

hvd_status Transport::wait_arm() {
  // Drained before the abort is looked at, so an abort after this point
  // leaves the fd readable.
  drain(abort_fd_);
  aborted();
  if (requests_.finished_since_last_call()) return HVD_AGAIN;
  return HVD_OK;
}

// ---- abort -----------------------------------------------------------------

void Transport::abort(hvd_status reason, int32_t peer) {
  abort_.trip(reason, peer);
  uint64_t one = 1;
  ssize_t n = ::write(abort_fd_, &one, sizeof(one));
  (void)n;
}

hvd_status Transport::aborted() {
  return abort_.apply(
      [this](hvd_status reason, int32_t peer) { apply_abort(reason, peer); });
}

void Transport::apply_abort(hvd_status reason, int32_t peer) {
  drain(abort_fd_);
  std::string why = hvd_plugin::abort_text(reason, peer);
  for (Connection* c : connections_) c->fail(reason, peer, why);
}

// ---- pools -----------------------------------------------------------------

Request* Transport::new_request(bool send) {
  Request* r = requests_.take();
  r->send = send;
  r->transport = this;
  return r;
}

void Transport::finish(Request* req, hvd_status status, int32_t peer,
                       uint64_t bytes) {
  requests_.finish(req, status, peer, bytes);
}

}  // namespace hvd_tcp
