#include "device/host_stream.h"

namespace hvd {

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
  std::unique_lock<std::mutex> lock(s.mutex_);
  for (;;) {
    s.changed_.wait(lock, [&] { return s.stopping_ || !s.queue_.empty(); });
    if (s.queue_.empty()) return;  // stopping, and drained
    std::function<void()> work = std::move(s.queue_.front());
    s.queue_.pop_front();
    lock.unlock();
    work();
    work = nullptr;
    lock.lock();
    ++s.completed_;
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

void HostEvent::wait() const {
  auto [state, position] = capture();
  if (state) state->wait_for(position);
}

}  // namespace hvd
