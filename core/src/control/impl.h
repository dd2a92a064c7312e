// Inside the control plane. Two threads touch the links:
//
// - the caller, in start/test of a gather or broadcast, reads and writes
//   the sockets itself, never waiting (the blocking forms spin briefly,
//   then sleep in poll() on every link between tests), so a message is
//   handled on the thread that needs it, with no hand-off;
// - the monitor thread sends heartbeats, checks silence, floods failure
//   notes, runs the failure callback, and reads the sockets only while the
//   caller is not in a call (then it sleeps in poll() on them, so a failure
//   is seen at once even when nobody calls).
//
// Lock order: io_mutex_ before a link's tx_mutex; failure_mutex_ is taken
// alone. The monitor only ever try_locks io_mutex_ and tx_mutex, so it
// never waits for the caller.
#pragma once

#include <poll.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "control/control_plane.h"
#include "control/link.h"
#include "control/net.h"

namespace hvd {

class Bootstrap;
using control::Clock;
using control::InboundMessage;
using control::Link;

struct ControlPlane::Impl {
  Impl(Bootstrap& bootstrap, const ControlPlaneOptions& options);
  ~Impl();

  // startup.cc: collective; connects the tree, starts the monitor and
  // learns every rank's host.
  void start();
  void connect_to_parent(int parent, Clock::time_point deadline);
  // Handshake on a fresh connection (the fd is taken over): true when
  // welcomed, false when refused for a stale token (read the address again).
  bool shake_hands(int fd, int parent, uint64_t token,
                   Clock::time_point deadline, const std::string& peer);
  void accept_children(int listen_fd, const std::vector<int>& children,
                       Clock::time_point deadline);
  void exchange_hosts(Clock::time_point deadline);
  // Startup failed with `why`: tell the neighbours and close without bye.
  void abandon(const std::string& why);

  // collectives.cc: a gather or broadcast is a step at a time, each
  // under io_mutex_ (the advance_* functions); the blocking forms wait
  // between them until `deadline`.
  enum class Step { idle, gathering, awaiting_parent, sending };
  void begin(Step step);
  void start_gather_locked(const std::vector<uint8_t>& mine);
  bool advance_gather(std::vector<std::vector<uint8_t>>* gathered);
  void start_broadcast_locked(const std::vector<uint8_t>& from_root);
  bool advance_broadcast(std::vector<uint8_t>* payload);
  // Children's bundles that have come, merged; true once all have.
  bool take_children();
  // Queues a frame of the step on `link` (sent as far as the socket
  // takes it) and remembers the link until flush_step() has sent it all.
  void send_step_frame(Link& link, control::FrameType type,
                       const control::FrameWriter::Part* parts, size_t count);
  bool flush_step();
  std::vector<std::vector<uint8_t>> gather(const std::vector<uint8_t>& mine,
                                           Clock::time_point deadline);
  std::vector<uint8_t> broadcast(const std::vector<uint8_t>& from_root,
                                 Clock::time_point deadline);
  void notify_round_called();

  // With io_mutex_ held (in `io`): runs done() (which reads the links)
  // until it is true, spinning for spin_time, then sleeping in poll() on
  // every link; HVD_ERR_TIMEOUT at `deadline`, naming waiting_for().
  template <typename Done>
  void wait_until(std::unique_lock<std::mutex>& io, Done&& done,
                  Clock::time_point deadline);
  std::string waiting_for() const;
  void sleep_on_links(std::unique_lock<std::mutex>& io,
                      Clock::time_point deadline);

  // io.cc: reading and writing links.
  void drain_all();  // io_mutex_ held
  void drain(Link& link);
  void dispatch(Link& link, control::FrameType type, const uint8_t* payload,
                uint32_t size);
  void push_inbound(Link& link, const uint8_t* payload, uint32_t size);
  void recycle(std::vector<uint8_t>&& buffer);
  // With tx held: sends the failure note the link is owed, without waiting.
  void send_owed_note(Link& link);
  // With tx held, after a send or flush: liveness and backlog bookkeeping.
  void after_send(Link& link);

  // failures.cc
  void note_failure(int rank, const std::string& host,
                    const std::string& reason);
  void link_failed(Link& link, const std::string& reason);
  [[noreturn]] void throw_failure() const;
  // A link the caller needs is no longer open: records why and throws.
  [[noreturn]] void throw_link_gone(Link& link);
  std::string host_of(int rank) const;
  std::string describe(int rank, const std::string& host) const;
  void fire_callback();

  // monitor.cc: the monitor thread.
  void monitor();
  void declare_silent(Link& link);

  // shutdown.cc: graceful leave, from the destructor.
  void leave();

  void wake(int fd);

  Bootstrap& bootstrap_;
  ControlPlaneOptions options_;
  const int rank_;
  const int size_;
  std::string host_;

  // Parent first (when any), then children in rank order; fixed once the
  // monitor runs.
  std::vector<std::unique_ptr<Link>> links_;
  Link* parent_ = nullptr;
  std::vector<Link*> children_;

  // Every rank's host, learned at startup (names, and an index per rank);
  // written once, before hosts_known_.
  std::vector<std::string> host_names_;
  std::vector<uint32_t> host_index_;
  std::atomic<bool> hosts_known_{false};
  uint64_t token_ = 0;  // what children must present (when this rank has any)

  int monitor_wake_fd_ = -1;  // eventfd: stop, callback set, failure
  int caller_wake_fd_ = -1;   // eventfd: a failure while the caller sleeps

  std::mutex io_mutex_;
  std::atomic<bool> in_call_{false};
  std::atomic<uint64_t> calls_{0};
  std::atomic<bool> stop_{false};
  // Silence is judged only after startup: until then every wait is bounded
  // by start_timeout instead.
  std::atomic<bool> armed_{false};
  std::atomic<int64_t> armed_at_{0};
  bool abandoned_ = false;

  mutable std::mutex failure_mutex_;
  std::optional<PeerFailure> failure_;
  std::string failure_host_;
  std::atomic<bool> failed_{false};
  std::function<void(const PeerFailure&)> callback_;
  bool callback_done_ = false;

  std::thread monitor_thread_;

  // The caller's state (guarded by io_mutex_).
  uint64_t gather_sequence_ = 0;
  uint64_t broadcast_sequence_ = 0;
  Step step_ = Step::idle;
  uint64_t sequence_ = 0;            // the step's gather or broadcast
  uint64_t taken_ = 0;               // a bit per child whose gather bundle came
  std::vector<Link*> step_sending_;  // links with the step's frame pending
  std::vector<uint8_t> bundle_;
  std::vector<uint8_t> payload_;  // the broadcast's
  std::vector<std::vector<uint8_t>> spare_buffers_;
  std::vector<pollfd> caller_polls_;

  // The latest round a neighbour called this rank to (written under
  // io_mutex_).
  std::atomic<uint64_t> summoned_round_{0};
  std::mutex round_callback_mutex_;
  std::function<void()> round_callback_;
};

template <typename Done>
void ControlPlane::Impl::wait_until(std::unique_lock<std::mutex>& io,
                                    Done&& done, Clock::time_point deadline) {
  Clock::time_point spin_end = Clock::time_point::min();
  for (;;) {
    if (done()) return;
    auto now = Clock::now();
    if (now >= deadline)
      throw Error(HVD_ERR_TIMEOUT,
                  "control plane: rank " + std::to_string(rank_) +
                      " timed out waiting for " + waiting_for());
    if (spin_end == Clock::time_point::min())
      spin_end = now + options_.spin_time;
    if (now < spin_end) {
      // Let a peer sharing this core run: it is likely the one to answer.
      sched_yield();
      continue;
    }
    sleep_on_links(io, deadline);
  }
}

}  // namespace hvd
