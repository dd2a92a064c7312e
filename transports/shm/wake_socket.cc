#include "wake_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "horovod_plugin/boundary.h"
#include "names.h"

namespace hvd_shm {
namespace {

socklen_t address_of(const char* name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  size_t n = strnlen(name, sizeof(addr->sun_path) - 1);
  std::memcpy(addr->sun_path + 1, name, n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

}  // namespace

WakeSocket::WakeSocket() {
  name_ = next_name('w').substr(1);
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) hvd_plugin::fail_errno("socket(AF_UNIX, SOCK_DGRAM)");
  sockaddr_un addr;
  socklen_t len = address_of(name_.c_str(), &addr);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int err = errno;
    ::close(fd_);
    errno = err;
    hvd_plugin::fail_errno("binding the wake socket @" + name_);
  }
}

WakeSocket::~WakeSocket() { ::close(fd_); }

void WakeSocket::drain() {
  char buf[64];
  while (recv(fd_, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
  }
}

void WakeSocket::wake(const char* name) const {
  sockaddr_un addr;
  socklen_t len = address_of(name, &addr);
  char one = 1;
  ssize_t n = sendto(fd_, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                     reinterpret_cast<sockaddr*>(&addr), len);
  (void)n;  // EAGAIN: wake-ups pending already; ECONNREFUSED: peer gone
}

}  // namespace hvd_shm
