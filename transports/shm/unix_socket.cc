#include "unix_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "horovod_plugin/boundary.h"

namespace hvd_shm {
namespace {

using hvd_plugin::fail;
using hvd_plugin::fail_errno;

socklen_t abstract_address(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof(addr->sun_path)) {
    fail(HVD_ERR_INTERNAL, "socket name too long: " + name);
  }
  std::memcpy(addr->sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                name.size());
}

int new_socket() {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail_errno("socket(AF_UNIX)");
  return fd;
}

}  // namespace

int listen_socket(const std::string& name) {
  int fd = new_socket();
  sockaddr_un addr;
  socklen_t len = abstract_address(name, &addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    ::close(fd);
    errno = err;
    fail_errno("listening on @" + name);
  }
  return fd;
}

int connect_socket(const std::string& name) {
  int fd = new_socket();
  sockaddr_un addr;
  socklen_t len = abstract_address(name, &addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) return fd;
  int err = errno;
  ::close(fd);
  if (err == EAGAIN) {
    errno = EAGAIN;
    return -1;
  }
  if (err == ECONNREFUSED || err == ENOENT) {
    fail(HVD_ERR_PEER_FAILED,
         "nobody listens at @" + name + " (the peer exited or closed it)");
  }
  errno = err;
  fail_errno("connecting to @" + name);
}

int accept_socket(int listen_fd) {
  int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) return fd;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
      errno == ECONNABORTED) {
    return -1;
  }
  fail_errno("accept on a shm listener");
}

bool send_message(int fd, const void* data, size_t bytes, const int* fds,
                  int fd_count) {
  iovec iov{const_cast<void*>(data), bytes};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  if (fd_count > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fd_count);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fd_count);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * fd_count);
  }
  for (;;) {
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(bytes)) return true;
    if (n >= 0) fail(HVD_ERR_INTERNAL, "short send on a shm socket");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    if (errno == EPIPE || errno == ECONNRESET) {
      fail(HVD_ERR_PEER_FAILED, "the peer closed the connection");
    }
    fail_errno("sendmsg on a shm socket");
  }
}

long receive_message(int fd, void* data, size_t bytes, int* fds, int max_fds,
                     int* fd_count) {
  iovec iov{data, bytes};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  *fd_count = 0;
  ssize_t n;
  do {
    n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
    if (errno == ECONNRESET) return 0;
    fail_errno("recvmsg on a shm socket");
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int count = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    const int* got = reinterpret_cast<const int*>(CMSG_DATA(c));
    for (int i = 0; i < count; ++i) {
      if (*fd_count < max_fds) {
        fds[(*fd_count)++] = got[i];
      } else {
        ::close(got[i]);
      }
    }
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    for (int i = 0; i < *fd_count; ++i) ::close(fds[i]);
    *fd_count = 0;
    fail(HVD_ERR_INTERNAL, "oversized handshake message on a shm socket");
  }
  return static_cast<long>(n);
}

}  // namespace hvd_shm
