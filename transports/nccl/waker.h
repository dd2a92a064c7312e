// The wait fd of the nccl transport: an eventfd written, in stream order,
// by a host function CUDA runs after each collective. It is reference
// counted because a host function may run after the transport is gone.
#pragma once

#include <atomic>
#include <cstdint>

namespace hvd_nccl {

class Waker {
 public:
  Waker();  // one reference, the creator's
  int fd() const { return fd_; }
  void notify();
  // HVD_OK-style: true when something completed since the last call.
  bool take();
  void ref() { refs_.fetch_add(1); }
  void unref();
  // For cudaLaunchHostFunc: notifies, then drops the reference taken for it.
  static void host_func(void* waker);

 private:
  ~Waker();
  int fd_ = -1;
  std::atomic<int> refs_{1};
  std::atomic<uint64_t> completed_{0};
};

}  // namespace hvd_nccl
