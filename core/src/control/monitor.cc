// The monitor thread: heartbeats, silence, failure notes, the callback. It
// sleeps in poll(): on the sockets while the caller is idle (so a failure is
// seen at once), on its wake-up fd alone while the caller is busy (the
// caller reads the sockets then).
#include <sys/eventfd.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "control/impl.h"

namespace hvd {

namespace {

constexpr int64_t kMs = 1000 * 1000;
// How often the monitor looks whether the caller went idle.
constexpr int64_t kBusyRecheck = 10 * kMs;

int64_t to_ns(std::chrono::nanoseconds d) { return d.count(); }

bool bytes_waiting(int fd) {
  int n = 0;
  return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

}  // namespace

void ControlPlane::Impl::declare_silent(Link& link) {
  std::string reason =
      "no heartbeat for " + control::describe_duration(options_.peer_timeout);
  note_failure(link.peer, link.host, reason);
  {
    // Best effort: should it wake up, the silent rank learns why it was
    // dropped.
    std::unique_lock<std::mutex> tx(link.tx_mutex, std::try_to_lock);
    if (tx.owns_lock()) send_owed_note(link);
  }
  link_failed(link, reason);
}

void ControlPlane::Impl::monitor() {
  const int64_t interval = to_ns(options_.heartbeat_interval);
  const int64_t timeout = to_ns(options_.peer_timeout);
  std::vector<int64_t> next_heartbeat(links_.size(), 0);
  std::vector<pollfd> polls;
  uint64_t seen_calls = calls_.load();

  while (!stop_.load()) {
    if (!in_call_.load()) {
      std::unique_lock<std::mutex> io(io_mutex_, std::try_to_lock);
      if (io.owns_lock()) drain_all();
    }
    int64_t now = control::now_ns();
    int64_t wake_at = now + interval;

    for (size_t i = 0; i < links_.size(); ++i) {
      Link& link = *links_[i];
      if (!link.open()) continue;

      if (armed_.load() && timeout > 0) {
        int64_t heard = std::max(link.last_receive.load(), armed_at_.load());
        if (now - heard >= timeout) {
          if (!bytes_waiting(link.fd)) {
            declare_silent(link);
            continue;
          }
          // Unread bytes: alive, only nobody has read them yet.
          link.last_receive.store(now);
          heard = now;
        }
        wake_at = std::min(wake_at, heard + timeout);
      }

      bool owes = link.owes_failure_note.load();
      bool due =
          now >= link.last_send.load() + interval && now >= next_heartbeat[i];
      if (owes || due || link.tx_backlog.load()) {
        std::unique_lock<std::mutex> tx(link.tx_mutex, std::try_to_lock);
        if (!tx.owns_lock()) {
          // The caller is sending on it; look again shortly.
          next_heartbeat[i] = now + std::max(kMs, interval / 8);
          if (owes) wake_at = std::min(wake_at, now + kMs);
        } else {
          send_owed_note(link);
          bool ok = true;
          if (link.open() && link.writer.pending())
            ok = link.writer.flush(link.fd);
          else if (link.open() && due)
            ok = link.writer.send(link.fd, control::FrameType::heartbeat);
          int error = errno;
          after_send(link);
          if (!ok)
            link_failed(
                link, std::string("connection error: ") + std::strerror(error));
          if (due) next_heartbeat[i] = now + interval;
        }
      }
      if (link.open())
        wake_at = std::min(wake_at, std::max(link.last_send.load() + interval,
                                             next_heartbeat[i]));
    }

    fire_callback();

    uint64_t calls = calls_.load();
    bool idle = !in_call_.load() && calls == seen_calls;
    seen_calls = calls;
    if (!idle) wake_at = std::min(wake_at, now + kBusyRecheck);

    polls.clear();
    polls.push_back({monitor_wake_fd_, POLLIN, 0});
    if (idle)
      for (auto& link : links_)
        if (link->open())
          polls.push_back(
              {link->fd,
               static_cast<short>(POLLIN |
                                  (link->tx_backlog.load() ? POLLOUT : 0)),
               0});
    int64_t wait = std::max<int64_t>(0, wake_at - control::now_ns());
    int wait_ms = static_cast<int>(
        std::min<int64_t>((wait + kMs - 1) / kMs, 3600 * 1000));
    int n = poll(polls.data(), polls.size(), wait_ms);
    if (n > 0 && (polls[0].revents & POLLIN)) {
      eventfd_t value;
      eventfd_read(monitor_wake_fd_, &value);
    }
  }
}

}  // namespace hvd
