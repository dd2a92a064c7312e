// Native collectives (hvd_p2p_api.native): the communicators of the
// transports that have a collectives extension, one per team (its members
// in order) and transport, created through comm_create the first time a
// reducer asks and kept until the engine goes. A team whose communicator
// could not be created is remembered as having none (logged once).
//
// get() and clear() run on the background thread; abort() on any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "horovod/transport.h"
#include "p2p/team.h"
#include "p2p/transport.h"

namespace hvd::p2p {

class NativeComms {
 public:
  NativeComms() = default;
  ~NativeComms() { clear(); }
  NativeComms(const NativeComms&) = delete;
  NativeComms& operator=(const NativeComms&) = delete;

  // The extension of `transport` and its communicator for `team`; NULL
  // (and *comm = NULL) when the transport has none or creation failed.
  // Creation waits for every member, sleeping between tries, until
  // kCreateTimeout or until `interrupted` returns true (a member may have
  // stopped before it joined: only the control plane can tell).
  const hvd_transport_collectives* get(
      const Team& team, Transport* transport, hvd_coll_comm** comm,
      const std::function<bool()>& interrupted);
  // comm_destroy for every communicator (before the transports finalize).
  void clear();
  // comm_abort for every communicator, and for those created later.
  void abort(hvd_status reason, int32_t peer);

  // How long comm_create may keep answering HVD_AGAIN.
  static constexpr std::chrono::seconds kCreateTimeout{30};
  // How long it sleeps between two comm_create calls that answer HVD_AGAIN.
  static constexpr std::chrono::microseconds kCreatePoll{50};

 private:
  struct Entry {
    std::vector<int32_t> members;  // world ranks, team order
    Transport* transport = nullptr;
    hvd_coll_comm* comm = nullptr;  // null: none for this team
  };
  std::mutex mutex_;  // entries_ against abort() from another thread
  std::vector<Entry> entries_;
  bool aborted_ = false;
  hvd_status abort_reason_ = HVD_OK;
  int32_t abort_peer_ = -1;
};

}  // namespace hvd::p2p
