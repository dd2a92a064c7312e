// Reading and writing the links: frames in, frames out, and the caller's
// sleep between them.
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "control/impl.h"

namespace hvd {

using control::FrameType;
using control::now_ns;

namespace {

std::string socket_error_reason(int error) {
  if (error == ECONNRESET) return "connection reset";
  if (error == EPIPE) return "connection closed";
  return std::string("connection error: ") + std::strerror(error);
}

}  // namespace

void ControlPlane::Impl::drain_all() {
  for (auto& link : links_) drain(*link);
}

void ControlPlane::Impl::drain(Link& link) {
  while (link.open()) {
    FrameType type;
    const uint8_t* payload;
    uint32_t size;
    bool bad;
    while (link.reader.next(&type, &payload, &size, &bad)) {
      dispatch(link, type, payload, size);
      if (!link.open()) return;
    }
    if (bad) {
      link_failed(link, "sent " + link.reader.why_bad());
      return;
    }
    ssize_t n = link.reader.read_from(link.fd);
    if (n > 0) {
      link.last_receive.store(now_ns());
      continue;
    }
    if (n == 0) {
      link_failed(link, "connection closed");
      return;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    link_failed(link, socket_error_reason(errno));
    return;
  }
}

void ControlPlane::Impl::dispatch(Link& link, FrameType type,
                                  const uint8_t* payload, uint32_t size) {
  switch (type) {
    case FrameType::heartbeat:
      return;
    case FrameType::gather:
    case FrameType::broadcast: {
      bool from_parent = type == FrameType::broadcast;
      if (link.is_parent != from_parent || size < 8) break;
      push_inbound(link, payload, size);
      return;
    }
    case FrameType::summon:
      if (size < 8) break;
      if (control::get_u64(payload) > summoned_round_.load())
        summoned_round_.store(control::get_u64(payload));
      notify_round_called();
      return;
    case FrameType::failure: {
      control::FailureNote note;
      if (!control::decode(payload, size, &note)) break;
      if (note.rank < 0 || note.rank >= size_) {
        link_failed(link, "sent a failure note naming rank " +
                              std::to_string(note.rank) + " of a world of " +
                              std::to_string(size_));
        return;
      }
      note_failure(note.rank, note.host, note.reason);
      return;
    }
    case FrameType::bye: {
      auto open = Link::State::open;
      if (link.state.compare_exchange_strong(open, Link::State::left)) {
        HVD_LOG(DEBUG) << "control plane: rank " << link.peer << " is leaving";
        // Lets the leaver's wait for our end of stream finish.
        shutdown(link.fd, SHUT_WR);
      }
      return;
    }
    default:
      break;
  }
  link_failed(link, std::string("sent an unexpected ") +
                        control::frame_type_name(type) + " frame");
}

void ControlPlane::Impl::push_inbound(Link& link, const uint8_t* payload,
                                      uint32_t size) {
  InboundMessage message;
  message.sequence = control::get_u64(payload);
  if (!spare_buffers_.empty()) {
    message.data = std::move(spare_buffers_.back());
    spare_buffers_.pop_back();
  }
  message.data.assign(payload + 8, payload + size);
  link.inbox.push_back(std::move(message));
}

void ControlPlane::Impl::recycle(std::vector<uint8_t>&& buffer) {
  constexpr size_t kMaxSpare = 16;
  if (spare_buffers_.size() < kMaxSpare)
    spare_buffers_.push_back(std::move(buffer));
}

void ControlPlane::Impl::after_send(Link& link) {
  if (link.writer.last_written() > 0) link.last_send.store(now_ns());
  link.tx_backlog.store(link.writer.pending());
}

void ControlPlane::Impl::send_owed_note(Link& link) {
  if (!link.owes_failure_note.exchange(false) || !link.open()) return;
  control::FailureNote note;
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failure_) return;
    note = {failure_->rank, failure_host_, failure_->reason};
  }
  auto bytes = control::encode(note);
  control::FrameWriter::Part part{bytes.data(), bytes.size()};
  bool ok = link.writer.send(link.fd, FrameType::failure, &part, 1);
  int error = errno;
  after_send(link);
  if (!ok) link_failed(link, socket_error_reason(error));
}

void ControlPlane::Impl::sleep_on_links(std::unique_lock<std::mutex>& io,
                                        Clock::time_point deadline) {
  caller_polls_.clear();
  caller_polls_.push_back({caller_wake_fd_, POLLIN, 0});
  for (auto& link : links_) {
    if (!link->open()) continue;
    short events = POLLIN;
    if (link->tx_backlog.load()) events |= POLLOUT;
    caller_polls_.push_back({link->fd, events, 0});
  }
  // A safety net: even a lost wake-up costs at most one heartbeat interval.
  auto until = std::min(deadline, Clock::now() + options_.heartbeat_interval);
  io.unlock();
  int n = poll(caller_polls_.data(), caller_polls_.size(),
               control::poll_timeout_ms(until));
  io.lock();
  if (n > 0 && (caller_polls_[0].revents & POLLIN)) {
    eventfd_t value;
    eventfd_read(caller_wake_fd_, &value);
  }
}

void ControlPlane::Impl::wake(int fd) {
  if (fd >= 0) eventfd_write(fd, 1);
}

}  // namespace hvd
