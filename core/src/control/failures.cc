// What a failure is on this rank: the first one seen or reported wins, is
// flooded to every neighbour, and is what every later call throws.
#include <sys/socket.h>

#include "common/log.h"
#include "control/impl.h"

namespace hvd {

std::string ControlPlane::Impl::describe(int rank,
                                         const std::string& host) const {
  std::string text = "rank " + std::to_string(rank);
  if (!host.empty()) text += " (host " + host + ")";
  return text;
}

std::string ControlPlane::Impl::host_of(int rank) const {
  if (hosts_known_.load(std::memory_order_acquire) && rank >= 0 &&
      static_cast<size_t>(rank) < host_index_.size())
    return host_names_[host_index_[rank]];
  if (rank == rank_) return host_;
  for (const auto& link : links_)
    if (link->peer == rank) return link->host;
  return "";
}

void ControlPlane::Impl::note_failure(int rank, const std::string& host,
                                      const std::string& reason) {
  std::string where = host.empty() ? host_of(rank) : host;
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failure_) return;
    failure_ = PeerFailure{rank, reason};
    failure_host_ = where;
  }
  failed_.store(true);
  HVD_LOG(ERROR) << describe(rank, where) << " failed: " << reason;
  for (auto& link : links_)
    if (link->open()) link->owes_failure_note.store(true);
  wake(caller_wake_fd_);
  wake(monitor_wake_fd_);
}

void ControlPlane::Impl::link_failed(Link& link, const std::string& reason) {
  auto open = Link::State::open;
  if (!link.state.compare_exchange_strong(open, Link::State::broken)) return;
  shutdown(link.fd, SHUT_RDWR);
  note_failure(link.peer, link.host, reason);
}

void ControlPlane::Impl::throw_failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (!failure_)
    throw Error(HVD_ERR_INTERNAL, "control plane: no failure to report");
  throw Error(
      HVD_ERR_PEER_FAILED,
      describe(failure_->rank, failure_host_) + " failed: " + failure_->reason,
      failure_->rank);
}

void ControlPlane::Impl::throw_link_gone(Link& link) {
  if (!failed_.load() && link.state.load() == Link::State::left) {
    // A normal leave is a failure when someone still needed the leaver:
    // flood it, so no other rank waits for it either.
    note_failure(
        link.peer, link.host,
        "shut down while rank " + std::to_string(rank_) + " still needed it");
  }
  throw_failure();
}

void ControlPlane::Impl::fire_callback() {
  std::function<void(const PeerFailure&)> callback;
  PeerFailure failure;
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failure_ || !callback_ || callback_done_) return;
    callback_done_ = true;
    callback = callback_;
    failure = *failure_;
  }
  try {
    callback(failure);
  } catch (const std::exception& e) {
    HVD_LOG(ERROR) << "control plane: the failure callback threw: " << e.what();
  }
}

}  // namespace hvd
