// Allreduce on the caller's thread, over a communicator's Gloo pairs, for
// tensors up to a few MiB. Small ones: every member sends its input to
// every other (one round). Larger ones: each member gathers one chunk of
// every input, reduces it and sends the result to every other (two rounds,
// each rank receiving 2 (size - 1) / size of the tensor, as a ring does).
// Inputs are folded in rank order, so every rank gets the same bits. It
// owns every buffer it waits on, so an abort from another thread ends its
// waits at once (through WaitSet), which Gloo's own allreduce does not
// allow.
#pragma once

#include <gloo/allreduce.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <vector>

namespace hvd_gloo {

// The buffers a call on the caller's thread waits on. Abort (any thread)
// ends those waits, and every later one.
class WaitSet {
 public:
  using Buffer = gloo::transport::UnboundBuffer;
  void watch(std::initializer_list<Buffer*> buffers);  // at most 3
  void unwatch();
  void interrupt();

 private:
  void abort_waits();  // under mu_
  std::mutex mu_;
  bool interrupted_ = false;
  std::array<Buffer*, 3> buffers_{};
};

struct DirectAllreduce {
  const void* send;
  void* recv;  // == send: in place
  size_t count;
  size_t element_size;
  gloo::AllreduceOptions::Func reduce;  // c = a op b, c may be a or b
};

// Whether a tensor of `bytes` is allreduced this way.
bool direct_allreduce_fits(uint64_t bytes);

// Runs `op` over `context`, its messages on slots made of `tag`. True when
// done; false when `waits` was interrupted. Throws as Gloo's calls do (a
// failed pair, a timeout); then, and when interrupted, the context's pairs
// are closed, so Gloo no longer touches the buffers. `scratch` holds what
// the peers send.
bool direct_allreduce(gloo::Context& context, const DirectAllreduce& op,
                      uint32_t tag, std::chrono::milliseconds timeout,
                      std::vector<char>& scratch, WaitSet& waits);

}  // namespace hvd_gloo
