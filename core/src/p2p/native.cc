#include "p2p/native.h"

#include <thread>

#include "common/log.h"

namespace hvd::p2p {

const hvd_transport_collectives* NativeComms::get(
    const Team& team, Transport* transport, hvd_coll_comm** comm,
    const std::function<bool()>& interrupted) {
  *comm = nullptr;
  const hvd_transport_collectives* ext = transport->collectives();
  if (ext == nullptr) return nullptr;
  for (const Entry& e : entries_) {
    if (e.transport == transport && e.members == team.world_ranks()) {
      *comm = e.comm;
      return e.comm ? ext : nullptr;
    }
  }
  Entry entry;
  entry.members = team.world_ranks();
  if (log_enabled(HVD_LOG_DEBUG)) {
    std::string list;
    for (int32_t r : entry.members) list += " " + std::to_string(r);
    HVD_LOG(DEBUG) << transport->name()
                   << ": creating the native communicator of process set "
                   << team.view()->process_set << ", world ranks" << list;
  }
  entry.transport = transport;
  auto deadline = std::chrono::steady_clock::now() + kCreateTimeout;
  hvd_status s = HVD_AGAIN;
  bool stopped = false;
  while (s == HVD_AGAIN && std::chrono::steady_clock::now() < deadline &&
         !(stopped = interrupted && interrupted())) {
    s = ext->comm_create(transport->instance(), team.view(), &entry.comm);
    if (s == HVD_AGAIN) std::this_thread::sleep_for(kCreatePoll);
  }
  if (s != HVD_OK) {
    entry.comm = nullptr;
    const std::string why =
        stopped        ? "given up: a failure was noted"
        : s == HVD_AGAIN ? "comm_create did not finish within 30 s"
                         : "comm_create failed";
    HVD_LOG(WARNING) << transport->error(
        "native collectives for a team of " + std::to_string(team.size()) +
        " rank(s) unavailable: " + why);
  } else {
    HVD_LOG(DEBUG) << transport->name() << ": native communicator for "
                   << team.size() << " rank(s)";
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_ && entry.comm && ext->comm_abort) {
    ext->comm_abort(entry.comm, abort_reason_, abort_peer_);
  }
  entries_.push_back(std::move(entry));
  *comm = entries_.back().comm;
  return *comm ? ext : nullptr;
}

void NativeComms::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& e : entries_) {
    if (e.comm) e.transport->collectives()->comm_destroy(e.comm);
  }
  entries_.clear();
}

void NativeComms::abort(hvd_status reason, int32_t peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) return;
  aborted_ = true;
  abort_reason_ = reason;
  abort_peer_ = peer;
  for (Entry& e : entries_) {
    const hvd_transport_collectives* ext = e.transport->collectives();
    if (e.comm && ext->comm_abort) ext->comm_abort(e.comm, reason, peer);
  }
}

}  // namespace hvd::p2p
