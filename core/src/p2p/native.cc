#include "p2p/native.h"

#include <thread>

#include "common/log.h"

namespace hvd::p2p {

NativeComms::Entry& NativeComms::entry_for(const Team& team,
                                           Transport* transport) {
  for (Entry& e : entries_) {
    if (e.transport == transport && e.members == team.world_ranks()) return e;
  }
  Entry entry;
  entry.members = team.world_ranks();
  entry.transport = transport;
  entry.deadline = std::chrono::steady_clock::now() + kCreateTimeout;
  if (log_enabled(HVD_LOG_DEBUG)) {
    std::string list;
    for (int32_t r : entry.members) list += " " + std::to_string(r);
    HVD_LOG(DEBUG) << transport->name()
                   << ": creating the native communicator of process set "
                   << team.view()->process_set << ", world ranks" << list;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back(std::move(entry));
  return entries_.back();
}

void NativeComms::step(Entry& entry, const Team& team) {
  const hvd_transport_collectives* ext = entry.transport->collectives();
  hvd_coll_comm* comm = nullptr;
  hvd_status s =
      ext->comm_create(entry.transport->instance(), team.view(), &comm);
  if (s == HVD_AGAIN && std::chrono::steady_clock::now() < entry.deadline) {
    return;
  }
  entry.pending = false;
  if (s != HVD_OK) {
    HVD_LOG(WARNING) << entry.transport->error(
        "native collectives for a team of " + std::to_string(team.size()) +
        " rank(s) unavailable: comm_create " +
        (s == HVD_AGAIN ? std::string("did not finish within 30 s")
                        : std::string("failed")));
    return;
  }
  HVD_LOG(DEBUG) << entry.transport->name() << ": native communicator for "
                 << team.size() << " rank(s)";
  std::lock_guard<std::mutex> lock(mutex_);
  entry.comm = comm;
  if (aborted_ && ext->comm_abort) {
    ext->comm_abort(comm, abort_reason_, abort_peer_);
  }
}

bool NativeComms::prepare(const Team& team, Transport* transport) {
  if (transport->collectives() == nullptr) return true;
  Entry& entry = entry_for(team, transport);
  if (entry.pending) step(entry, team);
  return !entry.pending;
}

const hvd_transport_collectives* NativeComms::get(const Team& team,
                                                  Transport* transport,
                                                  hvd_coll_comm** comm) {
  *comm = nullptr;
  const hvd_transport_collectives* ext = transport->collectives();
  if (ext == nullptr) return nullptr;
  Entry& entry = entry_for(team, transport);
  while (entry.pending) {
    step(entry, team);
    if (entry.pending) std::this_thread::yield();
  }
  *comm = entry.comm;
  return entry.comm ? ext : nullptr;
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
