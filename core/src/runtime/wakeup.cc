#include "runtime/wakeup.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "common/error.h"

namespace hvd::runtime {

Wakeup::Wakeup() {
  fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) throw Error(HVD_ERR_SYSTEM, "eventfd failed");
}

Wakeup::~Wakeup() {
  if (fd_ >= 0) close(fd_);
}

void Wakeup::wake() {
  uint64_t one = 1;
  ssize_t n = write(fd_, &one, sizeof one);
  (void)n;
  // After the write: a drain that finds the flag set finds the count too.
  written_.store(true, std::memory_order_release);
}

void Wakeup::drain() {
  // Most waits end without a wake (a spin's yield): no system call then.
  if (!written_.exchange(false, std::memory_order_acq_rel)) return;
  uint64_t value;
  ssize_t n = read(fd_, &value, sizeof value);
  (void)n;
}

}  // namespace hvd::runtime
