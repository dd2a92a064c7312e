// gather (up the tree to rank 0) and broadcast (down from it), a step at a
// time: start, then test until done. A test reads and writes what the
// links allow now and never waits, so a caller can poll a round together
// with its other work; the blocking forms test in a loop, sleeping on the
// links between tests.
#include <cerrno>
#include <cstring>

#include "control/impl.h"

namespace hvd {

using control::FrameType;
using Part = control::FrameWriter::Part;

namespace {

// Marks the caller busy, so the monitor leaves the sockets to it.
class CallScope {
 public:
  CallScope(std::atomic<bool>& in_call, std::atomic<uint64_t>& calls)
      : in_call_(in_call) {
    in_call_.store(true);
    calls.fetch_add(1);
  }
  ~CallScope() { in_call_.store(false); }

 private:
  std::atomic<bool>& in_call_;
};

[[noreturn]] void out_of_order(int peer, const char* what, uint64_t theirs,
                               uint64_t ours) {
  throw Error(HVD_ERR_INTERNAL,
              "control plane: rank " + std::to_string(peer) + " sent " + what +
                  " #" + std::to_string(theirs) + " while this rank is at #" +
                  std::to_string(ours) +
                  ": ranks called gather/broadcast in different orders");
}

uint64_t all_bits(size_t count) {
  return count >= 64 ? ~0ull : (1ull << count) - 1;
}

}  // namespace

void ControlPlane::Impl::begin(Step step) {
  if (failed_.load()) throw_failure();
  if (step_ != Step::idle)
    throw Error(HVD_ERR_INTERNAL,
                "control plane: a gather or broadcast began before the last "
                "one finished");
  step_ = step;
  step_sending_.clear();
}

void ControlPlane::Impl::start_gather_locked(const std::vector<uint8_t>& mine) {
  begin(Step::gathering);
  sequence_ = ++gather_sequence_;
  bundle_.clear();
  control::append_gather_entry(bundle_, rank_, mine.data(), mine.size());
  taken_ = 0;
}

bool ControlPlane::Impl::take_children() {
  for (size_t i = 0; i < children_.size(); ++i) {
    if (taken_ & (1ull << i)) continue;
    Link& child = *children_[i];
    if (child.inbox.empty()) {
      if (!child.open()) throw_link_gone(child);
      continue;
    }
    InboundMessage& message = child.inbox.front();
    if (message.sequence != sequence_)
      out_of_order(child.peer, "gather", message.sequence, sequence_);
    bundle_.insert(bundle_.end(), message.data.begin(), message.data.end());
    recycle(std::move(message.data));
    child.inbox.pop_front();
    taken_ |= 1ull << i;
  }
  return taken_ == all_bits(children_.size());
}

bool ControlPlane::Impl::advance_gather(
    std::vector<std::vector<uint8_t>>* gathered) {
  if (step_ == Step::gathering) {
    if (failed_.load()) throw_failure();
    drain_all();
    if (!take_children()) return false;
    if (!parent_) {
      step_ = Step::idle;
      if (!control::decode_gather_bundle(bundle_.data(), bundle_.size(), size_,
                                         gathered))
        throw Error(HVD_ERR_INTERNAL,
                    "control plane: a malformed gather bundle");
      return true;
    }
    uint8_t header[8];
    control::put_u64(header, sequence_);
    Part parts[2] = {{header, sizeof header}, {bundle_.data(), bundle_.size()}};
    step_ = Step::sending;
    send_step_frame(*parent_, FrameType::gather, parts, 2);
  }
  if (!flush_step()) return false;
  step_ = Step::idle;
  gathered->clear();
  return true;
}

void ControlPlane::Impl::start_broadcast_locked(
    const std::vector<uint8_t>& from_root) {
  begin(Step::awaiting_parent);
  sequence_ = ++broadcast_sequence_;
  if (!parent_) payload_ = from_root;
}

bool ControlPlane::Impl::advance_broadcast(std::vector<uint8_t>* payload) {
  if (step_ == Step::awaiting_parent) {
    if (failed_.load()) throw_failure();
    if (parent_) {
      drain_all();
      Link& parent = *parent_;
      if (parent.inbox.empty()) {
        if (!parent.open()) throw_link_gone(parent);
        return false;
      }
      InboundMessage& message = parent.inbox.front();
      if (message.sequence != sequence_)
        out_of_order(parent.peer, "broadcast", message.sequence, sequence_);
      payload_.swap(message.data);
      recycle(std::move(message.data));
      parent.inbox.pop_front();
    }
    uint8_t header[8];
    control::put_u64(header, sequence_);
    Part parts[2] = {{header, sizeof header},
                     {payload_.data(), payload_.size()}};
    step_ = Step::sending;
    for (Link* child : children_)
      send_step_frame(*child, FrameType::broadcast, parts, 2);
  }
  if (!flush_step()) return false;
  step_ = Step::idle;
  *payload = payload_;
  return true;
}

void ControlPlane::Impl::send_step_frame(Link& link, FrameType type,
                                         const Part* parts, size_t count) {
  std::lock_guard<std::mutex> tx(link.tx_mutex);
  if (!link.open()) throw_link_gone(link);
  send_owed_note(link);
  bool ok = link.open() && link.writer.send(link.fd, type, parts, count);
  int error = errno;
  after_send(link);
  if (!ok) {
    if (link.open())
      link_failed(link,
                  std::string("connection error: ") + std::strerror(error));
    throw_link_gone(link);
  }
  if (link.writer.pending()) step_sending_.push_back(&link);
}

bool ControlPlane::Impl::flush_step() {
  // A frame already begun is finished before a failure is thrown, so the
  // peer can still read what follows it.
  size_t kept = 0;
  for (Link* link : step_sending_) {
    std::lock_guard<std::mutex> tx(link->tx_mutex);
    if (!link->open()) throw_link_gone(*link);
    bool ok = link->writer.flush(link->fd);
    int error = errno;
    after_send(*link);
    if (!ok) {
      link_failed(*link,
                  std::string("connection error: ") + std::strerror(error));
      throw_link_gone(*link);
    }
    if (link->writer.pending()) step_sending_[kept++] = link;
  }
  step_sending_.resize(kept);
  if (kept > 0) drain_all();  // the peer may wait to write before it reads
  return kept == 0;
}

std::string ControlPlane::Impl::waiting_for() const {
  std::string who;
  auto add = [&](const Link& link) {
    who += (who.empty() ? "" : ", ") + describe(link.peer, link.host);
  };
  switch (step_) {
    case Step::gathering:
      for (size_t i = 0; i < children_.size(); ++i)
        if (!(taken_ & (1ull << i))) add(*children_[i]);
      return "the gather from " + who;
    case Step::awaiting_parent:
      add(*parent_);
      return "the broadcast from " + who;
    case Step::sending:
      for (const Link* link : step_sending_) add(*link);
      return who + " to take a message";
    case Step::idle:
      break;
  }
  return "nothing";
}

std::vector<std::vector<uint8_t>> ControlPlane::Impl::gather(
    const std::vector<uint8_t>& mine, Clock::time_point deadline) {
  CallScope call(in_call_, calls_);
  std::unique_lock<std::mutex> io(io_mutex_);
  start_gather_locked(mine);
  std::vector<std::vector<uint8_t>> gathered;
  wait_until(
      io, [&] { return advance_gather(&gathered); }, deadline);
  return gathered;
}

std::vector<uint8_t> ControlPlane::Impl::broadcast(
    const std::vector<uint8_t>& from_root, Clock::time_point deadline) {
  CallScope call(in_call_, calls_);
  std::unique_lock<std::mutex> io(io_mutex_);
  start_broadcast_locked(from_root);
  std::vector<uint8_t> payload;
  wait_until(
      io, [&] { return advance_broadcast(&payload); }, deadline);
  return payload;
}

void ControlPlane::Impl::notify_round_called() {
  if (in_call_.load()) return;  // the caller reads it itself
  std::lock_guard<std::mutex> lock(round_callback_mutex_);
  if (round_callback_) round_callback_();
}

// The public face.

void ControlPlane::start_gather(const std::vector<uint8_t>& mine) {
  CallScope call(impl_->in_call_, impl_->calls_);
  std::lock_guard<std::mutex> io(impl_->io_mutex_);
  impl_->start_gather_locked(mine);
}

bool ControlPlane::test_gather(std::vector<std::vector<uint8_t>>* gathered) {
  CallScope call(impl_->in_call_, impl_->calls_);
  std::lock_guard<std::mutex> io(impl_->io_mutex_);
  return impl_->advance_gather(gathered);
}

void ControlPlane::start_broadcast(const std::vector<uint8_t>& from_root) {
  CallScope call(impl_->in_call_, impl_->calls_);
  std::lock_guard<std::mutex> io(impl_->io_mutex_);
  impl_->start_broadcast_locked(from_root);
}

bool ControlPlane::test_broadcast(std::vector<uint8_t>* payload) {
  CallScope call(impl_->in_call_, impl_->calls_);
  std::lock_guard<std::mutex> io(impl_->io_mutex_);
  return impl_->advance_broadcast(payload);
}

std::vector<std::vector<uint8_t>> ControlPlane::gather(
    const std::vector<uint8_t>& mine) {
  return impl_->gather(mine, Clock::time_point::max());
}

std::vector<uint8_t> ControlPlane::broadcast(
    const std::vector<uint8_t>& from_root) {
  return impl_->broadcast(from_root, Clock::time_point::max());
}

void ControlPlane::wait_fds(std::vector<int>& fds) const {
  for (const auto& link : impl_->links_)
    if (link->open()) fds.push_back(link->fd);
}

bool ControlPlane::sending() const {
  return impl_->step_ == Impl::Step::sending;
}

void ControlPlane::summon(uint64_t round) {
  uint8_t body[8];
  control::put_u64(body, round);
  Part part{body, sizeof body};
  for (const auto& link : impl_->links_) {
    if (!link->open()) continue;
    std::lock_guard<std::mutex> tx(link->tx_mutex);
    impl_->send_owed_note(*link);
    bool ok = link->open() &&
              link->writer.send(link->fd, FrameType::summon, &part, 1);
    int error = errno;
    impl_->after_send(*link);
    // The next step on the link finds it gone.
    if (!ok && link->open())
      impl_->link_failed(
          *link, std::string("connection error: ") + std::strerror(error));
  }
}

bool ControlPlane::round_called(uint64_t round) const {
  return impl_->summoned_round_.load() >= round;
}

void ControlPlane::receive() {
  CallScope call(impl_->in_call_, impl_->calls_);
  std::lock_guard<std::mutex> io(impl_->io_mutex_);
  impl_->drain_all();
}

void ControlPlane::on_round_called(std::function<void()> callback) {
  std::lock_guard<std::mutex> lock(impl_->round_callback_mutex_);
  impl_->round_callback_ = std::move(callback);
}

}  // namespace hvd
