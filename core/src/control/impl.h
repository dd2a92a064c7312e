// Inside the control plane. Two threads touch the links:
//
// - the caller (the background thread) in gather/broadcast reads and writes
//   the sockets itself: it spins briefly, then sleeps in poll() on every
//   link, so a message is handled on the thread that needs it, with no
//   hand-off (and runs its data path meanwhile, when it gives one);
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
  // The longest a wait sleeps while the caller's other work is pending.
  static constexpr auto kMeanwhileNap = std::chrono::microseconds(100);

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

  // collectives.cc
  std::vector<std::vector<uint8_t>> gather(
      const std::vector<uint8_t>& mine, Clock::time_point deadline,
      const ControlPlane::Meanwhile& meanwhile = {});
  std::vector<uint8_t> broadcast(const std::vector<uint8_t>& from_root,
                                 Clock::time_point deadline,
                                 const ControlPlane::Meanwhile& meanwhile = {});

  // With io_mutex_ held (in `io`): reads every link until done() is true,
  // spinning for spin_time, then sleeping in poll(); runs `meanwhile`
  // (when given, without the lock) between looks. `writing` is a link
  // whose pending bytes also wait for the socket. Throws once a failure is
  // known (except while writing: a frame already begun is finished, so the
  // peer can still read what follows), and HVD_ERR_TIMEOUT at `deadline`.
  template <typename Done, typename What>
  void wait_until(std::unique_lock<std::mutex>& io, Done&& done, Link* writing,
                  Clock::time_point deadline, What&& what,
                  const ControlPlane::Meanwhile& meanwhile = {});
  void sleep_on_links(std::unique_lock<std::mutex>& io, Link* writing,
                      Clock::time_point deadline);

  // io.cc: reading and writing links.
  void drain_all();  // io_mutex_ held
  void drain(Link& link);
  void dispatch(Link& link, control::FrameType type, const uint8_t* payload,
                uint32_t size);
  void push_inbound(Link& link, const uint8_t* payload, uint32_t size);
  void recycle(std::vector<uint8_t>&& buffer);
  // Sends one frame with tx held, waiting (and reading all links) until the
  // socket has taken it. Throws when the link is gone.
  void send_frame(std::unique_lock<std::mutex>& io, Link& link,
                  control::FrameType type,
                  const control::FrameWriter::Part* parts, size_t count,
                  Clock::time_point deadline);
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
  std::vector<uint8_t> bundle_;
  std::vector<std::vector<uint8_t>> spare_buffers_;
  std::vector<pollfd> caller_polls_;
};

template <typename Done, typename What>
void ControlPlane::Impl::wait_until(std::unique_lock<std::mutex>& io,
                                    Done&& done, Link* writing,
                                    Clock::time_point deadline, What&& what,
                                    const ControlPlane::Meanwhile& meanwhile) {
  Clock::time_point spin_end = Clock::time_point::min();
  for (;;) {
    if (done()) return;
    if (!writing && failed_.load()) throw_failure();
    drain_all();
    if (done()) return;
    if (!writing && failed_.load()) throw_failure();
    bool pending = false;
    if (meanwhile) {
      io.unlock();
      pending = meanwhile();
      io.lock();
    }
    auto now = Clock::now();
    if (now >= deadline)
      throw Error(HVD_ERR_TIMEOUT, "control plane: rank " +
                                       std::to_string(rank_) +
                                       " timed out waiting for " + what());
    if (spin_end == Clock::time_point::min())
      spin_end = now + options_.spin_time;
    if (now < spin_end) {
      // Let a peer sharing this core run: it is likely the one to answer.
      sched_yield();
      continue;
    }
    sleep_on_links(
        io, writing,
        pending ? std::min(deadline, now + kMeanwhileNap) : deadline);
  }
}

}  // namespace hvd
