// Leaving: normally (bye, then wait briefly for each neighbour to close its
// side, so nothing is reset under an unread message), or after a failed
// startup (the failure note, then close).
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "control/impl.h"

namespace hvd {

namespace {

// Waits up to `deadline` until `link` has sent all it holds.
void flush_until(Link& link, Clock::time_point deadline) {
  while (link.writer.pending() && Clock::now() < deadline) {
    pollfd p{link.fd, POLLOUT, 0};
    if (poll(&p, 1, control::poll_timeout_ms(deadline)) <= 0) return;
    if (!link.writer.flush(link.fd)) return;
  }
}

// Waits until each link's peer has closed its side (reading and dropping
// what it still sends), so closing ours resets nothing unread.
void await_ends(std::vector<Link*> waiting, Clock::time_point deadline) {
  uint8_t scratch[4096];
  std::vector<pollfd> polls;
  while (!waiting.empty() && Clock::now() < deadline) {
    polls.clear();
    for (Link* link : waiting) polls.push_back({link->fd, POLLIN, 0});
    if (poll(polls.data(), polls.size(), control::poll_timeout_ms(deadline)) <=
        0)
      break;
    for (size_t i = polls.size(); i-- > 0;) {
      if (!polls[i].revents) continue;
      ssize_t n;
      do {
        n = recv(waiting[i]->fd, scratch, sizeof scratch, MSG_DONTWAIT);
      } while (n > 0 || (n < 0 && errno == EINTR));
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        waiting.erase(waiting.begin() + static_cast<long>(i));
    }
  }
}

}  // namespace

void ControlPlane::Impl::leave() {
  Clock::duration patience = std::chrono::seconds(2);
  if (options_.peer_timeout.count() > 0)
    patience = std::min<Clock::duration>(patience, options_.peer_timeout);
  auto deadline = Clock::now() + patience;
  std::vector<Link*> waiting;
  for (auto& link : links_) {
    if (!link->open()) continue;
    std::lock_guard<std::mutex> tx(link->tx_mutex);
    // A failure note still owed goes first: after our bye the neighbour
    // would take any wait for us as this rank leaving too early.
    send_owed_note(*link);
    if (link->open() && link->writer.send(link->fd, control::FrameType::bye))
      flush_until(*link, deadline);
    shutdown(link->fd, SHUT_WR);
    waiting.push_back(link.get());
  }

  await_ends(waiting, deadline);
}

void ControlPlane::Impl::abandon(const std::string& why) {
  abandoned_ = true;
  note_failure(rank_, host_, why);
  stop_.store(true);
  wake(monitor_wake_fd_);
  if (monitor_thread_.joinable()) monitor_thread_.join();
  auto deadline = Clock::now() + std::chrono::milliseconds(500);
  std::vector<Link*> waiting;
  for (auto& link : links_) {
    if (!link->open()) continue;
    std::lock_guard<std::mutex> tx(link->tx_mutex);
    send_owed_note(*link);
    flush_until(*link, deadline);
    shutdown(link->fd, SHUT_WR);
    waiting.push_back(link.get());
  }
  await_ends(waiting, deadline);
}

}  // namespace hvd
