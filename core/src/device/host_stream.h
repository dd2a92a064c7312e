// The fake device: host memory with stream and event semantics. Each stream
// is a worker thread that runs its queued work in order; an event captures
// the stream's position when recorded and completes once the worker has
// passed it. Lets the ordering logic of GPU code paths run, and be tested,
// without a GPU.
//
// Like a CUDA stream, a host stream fails stickily: work that reports an
// error (enqueue_fallible) fails every event recorded after it, and the
// stream skips the work queued after it.
//
// Test knob: HOROVOD_FAKE_DEVICE_DELAY_US=N makes the worker sleep a
// pseudo-random 0..N microseconds before each work item, so work that is
// not ordered after what it reads shows up as wrong results.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace hvd {

// What streams and events share: survives the stream while events recorded
// on it are alive.
class HostStreamState {
 public:
  // Position of the last enqueued work item (0: none yet).
  uint64_t enqueued() const;
  bool reached(uint64_t position) const;
  // Blocks until the worker has finished work item `position`.
  void wait_for(uint64_t position) const;
  // "" unless work item `position` or one before it failed: then why.
  std::string failure_at(uint64_t position) const;

 private:
  friend class HostStream;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<std::function<std::string()>> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool stopping_ = false;
  uint64_t failed_at_ = 0;  // the first work item that failed (0: none)
  std::string failure_;
};

class HostStream {
 public:
  HostStream();
  // Finishes the queued work, then stops the worker.
  ~HostStream();
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  // Queues `work` (which must not throw); returns its position.
  uint64_t enqueue(std::function<void()> work);
  // Queues work that returns "" or why it failed (which fails the stream).
  uint64_t enqueue_fallible(std::function<std::string()> work);
  void synchronize() const;
  const std::shared_ptr<HostStreamState>& state() const { return state_; }

 private:
  void run();
  uint64_t push(std::function<std::string()> work);
  std::shared_ptr<HostStreamState> state_;
  std::thread worker_;
};

// A recorded position on a host stream; an event never recorded, or
// recorded on the NULL (synchronous) stream, is complete.
class HostEvent {
 public:
  void record(const HostStream* stream);
  bool complete() const;
  void wait() const;
  // "" unless the stream failed at or before the recorded position.
  std::string failure() const;
  // The position captured now, for a later wait that must not see a
  // re-record (stream_wait_event semantics).
  std::pair<std::shared_ptr<HostStreamState>, uint64_t> capture() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<HostStreamState> state_;
  uint64_t position_ = 0;
};

}  // namespace hvd
