// One connection of the control plane: to this rank's parent or to one of
// its children. Reading (reader, inbox) is done by whichever thread holds
// the plane's io mutex; writing (writer) under the link's own tx mutex.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "control/frames.h"

namespace hvd::control {

struct InboundMessage {
  uint64_t sequence = 0;
  std::vector<uint8_t> data;
};

struct Link {
  enum class State {
    open,
    left,    // the peer said bye; it is shutting down normally
    broken,  // the connection failed, or the peer was declared failed
  };

  Link(int fd_, int peer_, std::string host_, bool is_parent_)
      : fd(fd_), peer(peer_), host(std::move(host_)), is_parent(is_parent_) {}
  ~Link() {
    if (fd >= 0) close(fd);
  }
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  bool open() const { return state.load() == State::open; }

  const int fd;
  const int peer;    // world rank at the other end
  std::string host;  // its host, from the handshake (set before use)
  const bool is_parent;

  std::atomic<State> state{State::open};
  // Steady-clock nanoseconds of the last byte received / sent.
  std::atomic<int64_t> last_receive{0};
  std::atomic<int64_t> last_send{0};
  // A failure note is owed to this peer (sent by whoever next holds tx).
  std::atomic<bool> owes_failure_note{false};

  // Guarded by the plane's io mutex.
  FrameReader reader;
  std::deque<InboundMessage> inbox;  // gather bundles or broadcasts

  // Guarded by tx_mutex.
  std::mutex tx_mutex;
  FrameWriter writer;
  // writer.pending(), readable without the mutex.
  std::atomic<bool> tx_backlog{false};
};

}  // namespace hvd::control
