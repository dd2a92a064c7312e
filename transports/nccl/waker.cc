#include "waker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include "horovod_plugin/boundary.h"

namespace hvd_nccl {

Waker::Waker() {
  fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) hvd_plugin::fail_errno("nccl: eventfd");
}

Waker::~Waker() {
  if (fd_ >= 0) ::close(fd_);
}

void Waker::notify() {
  completed_.fetch_add(1);
  uint64_t one = 1;
  ssize_t n = ::write(fd_, &one, sizeof(one));
  (void)n;  // a full counter is still readable
}

bool Waker::take() {
  uint64_t drained = 0;
  while (::read(fd_, &drained, sizeof(drained)) > 0) {
  }
  return completed_.exchange(0) != 0;
}

void Waker::unref() {
  if (refs_.fetch_sub(1) == 1) delete this;
}

void Waker::host_func(void* waker) {
  auto* w = static_cast<Waker*>(waker);
  w->notify();
  w->unref();
}

}  // namespace hvd_nccl
