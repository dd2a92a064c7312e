#include "sockets.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "horovod_plugin/boundary.h"

namespace hvd_tcp {

using hvd_plugin::fail_errno;

namespace {

int new_socket(int family) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail_errno("socket");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

Address any_address(int family) {
  Address a;
  a.storage.ss_family = static_cast<sa_family_t>(family);
  a.length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  return a;
}

int listen_on(const Address& address) {
  int fd =
      socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail_errno("socket");
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address.family() == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  }
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address.storage),
           address.length) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    ::close(fd);
    errno = err;
    fail_errno("listening on " + address.text());
  }
  return fd;
}

Address bound_address(int fd) {
  Address a;
  a.length = sizeof(a.storage);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.length);
  return a;
}

int start_connect(const Address& to, const Address* from, int* error) {
  *error = 0;
  int fd = new_socket(to.family());
  if (from != nullptr &&
      bind(fd, reinterpret_cast<const sockaddr*>(&from->storage),
           from->length) != 0) {
    *error = errno;
    ::close(fd);
    return -1;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to.storage), to.length) ==
          0 ||
      errno == EINPROGRESS) {
    return fd;
  }
  *error = errno;
  ::close(fd);
  return -1;
}

int connect_result(int fd) {
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) return -1;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

int accept_one(int listen_fd) {
  int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
        errno == ECONNABORTED) {
      return -1;
    }
    fail_errno("accept on a tcp listener");
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

long send_some(int fd, const iovec* iov, int count) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(count);
  for (;;) {
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -1;
  }
}

long recv_some(int fd, void* buf, size_t bytes) {
  for (;;) {
    ssize_t n = recv(fd, buf, bytes, MSG_DONTWAIT);
    if (n > 0) return n;
    if (n == 0) return bytes == 0 ? 0 : -2;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -1;
  }
}

namespace {

// The host part of an address, IPv4-mapped IPv6 as IPv4; false if neither.
bool host_bytes(const sockaddr_storage& a, std::string* out) {
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    out->assign(reinterpret_cast<const char*>(&v4.sin_addr), 4);
    return true;
  }
  if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    const auto* b = reinterpret_cast<const char*>(&v6.sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) {
      out->assign(b + 12, 4);
    } else {
      out->assign(b, 16);
    }
    return true;
  }
  return false;
}

bool is_loopback(const std::string& host) {
  if (host.size() == 4) return static_cast<uint8_t>(host[0]) == 127;
  static const char kV6Loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                       0, 0, 0, 0, 0, 0, 0, 1};
  return host == std::string(kV6Loopback, 16);
}

}  // namespace

bool same_host(int fd) {
  sockaddr_storage mine{}, theirs{};
  socklen_t a = sizeof(mine), b = sizeof(theirs);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &a) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &b) != 0) {
    return false;
  }
  std::string local, peer;
  if (!host_bytes(mine, &local) || !host_bytes(theirs, &peer)) return false;
  return local == peer || is_loopback(peer);
}

bool set_congestion_control(int fd, const std::string& name) {
  return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                    static_cast<socklen_t>(name.size())) == 0;
}

std::vector<std::string> congestion_controls() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_available_congestion_control");
  std::vector<std::string> names;
  std::string name;
  while (in >> name) names.push_back(name);
  return names;
}

bool at_end(int fd) {
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 ||
         (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace hvd_tcp
