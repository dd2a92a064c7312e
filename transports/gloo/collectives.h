// Gloo's own collectives over a team, offered through the ABI's collectives
// extension. Each communicator is a Gloo context (full mesh, rendezvous over
// the host's bootstrap store) served by its own thread: Gloo's calls block,
// so they run there, each with Gloo's timeout, and the core sees them as
// requests it tests like any other. An allreduce of up to a few MiB runs
// on the caller's thread instead (handing it over and back would cost more
// than it takes): direct_allreduce.h, which an abort interrupts at once.
#pragma once

#include <gloo/rendezvous/context.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "direct_allreduce.h"
#include "horovod/transport.h"
#include "request.h"

namespace hvd_gloo {

class Transport;

class Comm {
 public:
  // Starts connecting the team's full mesh (ready() says when it is done).
  Comm(Transport& transport, const hvd_team& team, std::string key_prefix);
  ~Comm();  // waits for the running collective (bounded by the timeout)
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // HVD_AGAIN while connecting, then HVD_OK or why it failed (`why`).
  hvd_status ready(std::string* why) const;
  bool same_team(const hvd_team& team) const;
  int size() const { return static_cast<int>(world_ranks_.size()); }
  int rank() const { return rank_; }
  Transport& transport() { return transport_; }
  // Tags keep consecutive collectives of this comm apart; every member
  // posts them in the same order.
  uint32_t next_tag() { return ++tag_; }

  using Body = std::function<void(gloo::rendezvous::Context&)>;
  // Queues `body` (which runs Gloo's collective on the comm's thread) and
  // returns its request, which completes with `bytes` (written here).
  Request* post(Body body, uint64_t bytes);
  // Runs `op` on the calling thread (direct_allreduce) and returns its
  // request, complete; when a collective of this comm is still queued or
  // running, queues it behind them (post) instead, so they run in order.
  Request* allreduce_here(const DirectAllreduce& op, uint32_t tag,
                          uint64_t bytes);

  // Any thread: every queued or running collective fails with `reason`.
  void abort(hvd_status reason, int32_t peer);

 private:
  struct Job {
    Request* req;
    Body body;
    uint64_t bytes = 0;
  };
  void run();
  // Runs Gloo's call: HVD_OK, or why it failed (logged), with the rank at
  // fault in *peer (-1: unknown).
  hvd_status call(const Body& body, int32_t* peer);
  // Under mu_: `req` of a finished call completes.
  void finish(Request* req, hvd_status status, int32_t peer, uint64_t bytes);

  Transport& transport_;
  const int rank_;
  const std::vector<int32_t> world_ranks_;
  const int32_t process_set_;
  const std::string key_prefix_;
  std::shared_ptr<gloo::rendezvous::Context> context_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  hvd_status state_ = HVD_AGAIN;
  std::string why_;
  bool stopping_ = false;
  hvd_status failure_ = HVD_OK;
  int32_t failure_peer_ = -1;
  std::deque<Job> jobs_;
  Request* running_ = nullptr;
  uint32_t tag_ = 0;
  // allreduce_here's: one runs at a time, on whichever thread.
  WaitSet waits_;
  std::vector<char> scratch_;
  std::thread thread_;
};

// The extension's table (its `next` is set where the plugin's table chains
// it).
extern const hvd_transport_collectives kCollectives;

}  // namespace hvd_gloo
