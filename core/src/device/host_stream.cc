#include "device/host_stream.h"

#include <chrono>
#include <cstdlib>
#include <random>

namespace hvd {
namespace {

// HOROVOD_FAKE_DEVICE_DELAY_US, read once: the longest sleep before a work
// item (0: none).
uint64_t max_delay_us() {
  static const uint64_t delay = [] {
    const char* text = std::getenv("HOROVOD_FAKE_DEVICE_DELAY_US");
    return text != nullptr ? std::strtoull(text, nullptr, 10) : 0ull;
  }();
  return delay;
}

}  // namespace

uint64_t HostStreamState::enqueued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return enqueued_;
}

bool HostStreamState::reached(uint64_t position) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ >= position;
}

void HostStreamState::wait_for(uint64_t position) const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return completed_ >= position; });
}

std::string HostStreamState::failure_at(uint64_t position) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_at_ != 0 && failed_at_ <= position ? failure_ : std::string();
}

HostStream::HostStream()
    : state_(std::make_shared<HostStreamState>()), worker_([this] { run(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex_);
    state_->stopping_ = true;
  }
  state_->changed_.notify_all();
  worker_.join();
}

uint64_t HostStream::enqueue(std::function<void()> work) {
  return push([work = std::move(work)] {
    work();
    return std::string();
  });
}

uint64_t HostStream::enqueue_fallible(std::function<std::string()> work) {
  return push(std::move(work));
}

uint64_t HostStream::push(std::function<std::string()> work) {
  uint64_t position;
  {
    std::lock_guard<std::mutex> lock(state_->mutex_);
    state_->queue_.push_back(std::move(work));
    position = ++state_->enqueued_;
  }
  state_->changed_.notify_all();
  return position;
}

void HostStream::synchronize() const { state_->wait_for(state_->enqueued()); }

void HostStream::run() {
  HostStreamState& s = *state_;
  const uint64_t delay = max_delay_us();
  std::minstd_rand random(
      static_cast<unsigned>(reinterpret_cast<uintptr_t>(this) >> 4));
  std::unique_lock<std::mutex> lock(s.mutex_);
  for (;;) {
    s.changed_.wait(lock, [&] { return s.stopping_ || !s.queue_.empty(); });
    if (s.queue_.empty()) return;  // stopping, and drained
    std::function<std::string()> work = std::move(s.queue_.front());
    s.queue_.pop_front();
    const bool failed = s.failed_at_ != 0;
    lock.unlock();
    std::string failure;
    if (!failed) {  // after a failure the stream skips its work
      if (delay > 0) {
        std::this_thread::sleep_for(
            std::chrono::microseconds(random() % (delay + 1)));
      }
      failure = work();
    }
    work = nullptr;
    lock.lock();
    ++s.completed_;
    if (!failure.empty() && s.failed_at_ == 0) {
      s.failed_at_ = s.completed_;
      s.failure_ = std::move(failure);
    }
    s.changed_.notify_all();
  }
}

void HostEvent::record(const HostStream* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stream == nullptr) {
    state_.reset();
    position_ = 0;
  } else {
    state_ = stream->state();
    position_ = state_->enqueued();
  }
}

std::pair<std::shared_ptr<HostStreamState>, uint64_t> HostEvent::capture()
    const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {state_, position_};
}

bool HostEvent::complete() const {
  auto [state, position] = capture();
  return !state || state->reached(position);
}

std::string HostEvent::failure() const {
  auto [state, position] = capture();
  return state ? state->failure_at(position) : std::string();
}

void HostEvent::wait() const {
  auto [state, position] = capture();
  if (state) state->wait_for(position);
}

}  // namespace hvd
