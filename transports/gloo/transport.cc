#include "transport.h"

#include <arpa/inet.h>
#include <gloo/transport/tcp/device.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include "collectives.h"
#include "common/host_access.h"
#include "connection.h"
#include "horovod_plugin/boundary.h"
#include "protocol.h"

namespace hvd_gloo {

using hvd_plugin::fail;
using hvd_plugin::fail_errno;
using hvd_plugin::refuse;

namespace {

uint32_t ipv4_of(const std::string& name) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) fail_errno("gloo: getifaddrs");
  uint32_t found = 0;
  std::vector<std::string> seen;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    seen.push_back(a->ifa_name);
    if (found == 0 && name == a->ifa_name) {
      found = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr;
    }
  }
  freeifaddrs(list);
  if (found == 0) {
    std::string names;
    for (const std::string& n : seen) names += (names.empty() ? "" : ", ") + n;
    fail(HVD_ERR_CONFIG,
         "gloo: [transport.gloo] interface '" + name +
             "' has no IPv4 address (interfaces with one: " + names + ")");
  }
  return found;
}

// Gloo writes to its sockets without MSG_NOSIGNAL, so a peer that goes away
// would kill this process with SIGPIPE instead of failing the connection.
// Where nobody has chosen what SIGPIPE does, it is ignored (Python does the
// same at start-up); a handler someone installed is left alone.
void ignore_sigpipe(const hvd_host* host) {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) {
    return;
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  if (sigaction(SIGPIPE, &ignore, nullptr) == 0) {
    hvd_transport_common::log(
        host, HVD_LOG_DEBUG,
        "gloo: SIGPIPE is now ignored (Gloo's sockets would raise it when a "
        "peer goes away)");
  }
}

}  // namespace

Transport::Transport(const hvd_host* host)
    : host_(host), options_(read_options(host)) {
  ignore_sigpipe(host);
  ipv4_ = ipv4_of(options_.interface);
  try {
    gloo::transport::tcp::attr attr;
    attr.iface = options_.interface;
    device_ = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    fail(HVD_ERR_SYSTEM, std::string("gloo: creating the TCP device on '") +
                             options_.interface + "': " + e.what());
  }
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) fail_errno("gloo: eventfd");
}

Transport::~Transport() {
  comms_.destroy_pending();
  std::vector<Connection*> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns.assign(connections_.begin(), connections_.end());
    connections_.clear();
  }
  for (Connection* c : conns) delete c;
  for (Listener* l : listeners_) {
    ::close(l->fd);
    delete l;
  }
  for (Request* r : live_) delete r;
  device_.reset();
  if (event_fd_ >= 0) ::close(event_fd_);
}

int32_t Transport::rank() const {
  return hvd_transport_common::world_rank(host_);
}

void Transport::properties(hvd_transport_properties* props) const {
  *props = hvd_transport_properties{};
  props->struct_size = HVD_STRUCT_SIZE(hvd_transport_properties, handle_bytes);
  props->mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);
  // Gloo's device runs a loop thread of its own.
  props->flags = HVD_TRANSPORT_NATIVE_COLLECTIVES | HVD_TRANSPORT_OWN_THREADS;
  props->tag_bits = kTagBits;
  props->max_requests = options_.max_requests;
  props->max_message_bytes = uint64_t{1} << 40;
  props->bandwidth_gbps = 10.0;
  props->latency_us = 20.0;
  props->handle_bytes = sizeof(Handle);
}

hvd_status Transport::listen(void* handle, Listener** out) {
  if (hvd_status a = aborted(); a != HVD_OK) {
    return refuse(a, "gloo: listen after abort");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) fail_errno("gloo: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = ipv4_;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    errno = err;
    fail_errno("gloo: listening on " + options_.interface);
  }
  auto* l = new Listener{this, fd};
  {
    std::lock_guard<std::mutex> lock(mu_);
    listeners_.insert(l);
  }
  Handle h{};
  h.magic = kHandleMagic;
  h.rank = rank();
  h.port = addr.sin_port;
  h.ipv4 = addr.sin_addr.s_addr;
  std::memcpy(handle, &h, sizeof(h));
  *out = l;
  return HVD_OK;
}

hvd_status Transport::accept(Listener* listener, const hvd_conn_info* info,
                             Connection** out) {
  if (hvd_status a = aborted(); a != HVD_OK) {
    return refuse(a, "gloo: accept after abort");
  }
  if (info == nullptr) {
    fail(HVD_ERR_INVALID_ARGUMENT, "gloo: accept: info is NULL");
  }
  int fd =
      ::accept4(listener->fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return HVD_AGAIN;
    }
    fail_errno("gloo: accept");
  }
  auto* c =
      new Connection(*this, Connection::Role::kAcceptor, fd, Handle{}, *info);
  std::lock_guard<std::mutex> lock(mu_);
  connections_.insert(c);
  *out = c;
  return HVD_OK;
}

hvd_status Transport::connect(const void* handle, const hvd_conn_info* info,
                              Connection** out) {
  if (hvd_status a = aborted(); a != HVD_OK) {
    return refuse(a, "gloo: connect after abort");
  }
  if (info == nullptr) {
    fail(HVD_ERR_INVALID_ARGUMENT, "gloo: connect: info is NULL");
  }
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  if (h.magic != kHandleMagic) {
    fail(HVD_ERR_INVALID_ARGUMENT, "gloo: connect: not a gloo listen handle");
  }
  auto* c = new Connection(*this, Connection::Role::kConnector, -1, h, *info);
  std::lock_guard<std::mutex> lock(mu_);
  connections_.insert(c);
  *out = c;
  return HVD_OK;
}

void Transport::close_listener(Listener* listener) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    listeners_.erase(listener);
  }
  ::close(listener->fd);
  delete listener;
}

void Transport::close_connection(Connection* conn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.erase(conn);
  }
  delete conn;
}

hvd_status Transport::conn_test(Connection* conn) {
  std::string why;
  hvd_status s = conn->state(&why);
  if (s == HVD_OK || s == HVD_AGAIN) return s;
  std::string who = conn->peer_rank() >= 0
                        ? "with rank " + std::to_string(conn->peer_rank())
                        : std::string("being accepted");
  return refuse(s, "gloo: the connection " + who + " failed: " + why);
}

int32_t Transport::failed_member(const std::vector<int32_t>& members,
                                 std::chrono::milliseconds patience) {
  const auto until = std::chrono::steady_clock::now() + patience;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Connection* c : connections_) {
        int32_t peer = c->failed_peer();
        if (peer >= 0 &&
            std::find(members.begin(), members.end(), peer) != members.end()) {
          return peer;
        }
      }
    }
    if (std::chrono::steady_clock::now() >= until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Request* Transport::new_request(
    std::shared_ptr<std::atomic<uint32_t>> in_flight) {
  auto* r = new Request;
  r->transport = this;
  r->in_flight = std::move(in_flight);
  std::lock_guard<std::mutex> lock(live_mu_);
  live_.insert(r);
  return r;
}

void Transport::complete(Request* r, hvd_status status, int32_t peer,
                         uint64_t bytes) {
  if (r->claimed.exchange(true)) return;
  r->result.struct_size = sizeof(r->result);
  r->result.status = status;
  r->result.peer = status == HVD_OK ? -1 : peer;
  r->result.bytes = status == HVD_OK || status == HVD_ERR_TRUNCATED ? bytes : 0;
  r->complete.store(true, std::memory_order_release);
  completed_since_arm_.fetch_add(1);
  uint64_t one = 1;
  ssize_t n = ::write(event_fd_, &one, sizeof(one));
  (void)n;  // a full counter is still readable
}

hvd_status Transport::test(Request* r, int32_t* done, hvd_completion* out) {
  if (!r->complete.load(std::memory_order_acquire)) {
    *done = 0;
    return HVD_OK;
  }
  *done = 1;
  if (out != nullptr) {
    size_t size = out->struct_size != 0 && out->struct_size < sizeof(*out)
                      ? out->struct_size
                      : sizeof(*out);
    hvd_completion c = r->result;
    c.struct_size = size;
    std::memcpy(out, &c, size);
  }
  if (r->in_flight) r->in_flight->fetch_sub(1);
  release(r);
  return HVD_OK;
}

void Transport::release(Request* r) {
  if (r->holders.fetch_sub(1) != 1) return;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    live_.erase(r);
  }
  delete r;
}

hvd_status Transport::wait_arm() {
  uint64_t drained = 0;
  while (::read(event_fd_, &drained, sizeof(drained)) > 0) {
  }
  if (completed_since_arm_.exchange(0) != 0) return HVD_AGAIN;
  return HVD_OK;
}

void Transport::abort(hvd_status reason, int32_t peer) {
  std::vector<Connection*> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    abort_.trip(reason, peer);
    reason = abort_.reason(&peer);
    conns.assign(connections_.begin(), connections_.end());
    // Connections are deleted only on the core's thread, under mu_'s
    // protection of the set; abort holds it while it reaches them.
    for (Connection* c : conns) c->abort(reason, peer);
    comms_.for_each_live([&](Comm* c) { c->abort(reason, peer); });
  }
  uint64_t one = 1;
  ssize_t n = ::write(event_fd_, &one, sizeof(one));
  (void)n;
}

Comm* Transport::pending_comm(const hvd_team& team) {
  return comms_.pending(team, "gloo", [&](uint32_t n) {
    if (hvd_status a = aborted(); a != HVD_OK) {
      fail(a, "gloo: comm_create after abort");
    }
    std::string prefix = "coll." + std::to_string(team.process_set) + "." +
                         std::to_string(team.epoch) + "." + std::to_string(n) +
                         "/";
    return new Comm(*this, team, prefix);
  });
}

}  // namespace hvd_gloo
