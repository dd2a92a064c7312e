// The control plane: the core's own TCP connections along a tree rooted at
// rank 0 (each rank connects to its parent; addresses exchanged through the
// bootstrap), independent of the data transport. It carries the small
// messages of negotiation (gather to the root, broadcast from it),
// heartbeats, and failures.
//
// A rank that dies (connection reset) or stops answering heartbeats for
// [runtime] peer_timeout is declared failed; the failure floods the tree so
// every rank learns which rank failed, and every blocked or later call
// throws hvd::Error(HVD_ERR_PEER_FAILED, "rank R (host H) failed: ...", R).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hvd {

class Bootstrap;
class Config;

struct PeerFailure {
  int rank = -1;
  std::string reason;  // "connection closed", "no heartbeat for 10 s", ...
};

// What the control plane reads from the configuration; tests and tools may
// build one directly. A peer silent for peer_timeout (0: never) is declared
// failed; a rank that sent nothing for heartbeat_interval sends a heartbeat
// (an interval over half of peer_timeout is cut to a third of it).
struct ControlPlaneOptions {
  std::chrono::milliseconds peer_timeout{10000};       // runtime.*
  std::chrono::milliseconds heartbeat_interval{1000};  // runtime.*
  std::chrono::milliseconds start_timeout{30000};      // runtime.*
  std::chrono::microseconds spin_time{50};             // runtime.*
  int tree_arity = 4;  // 1..64; see tree.h for why four
  // Part of the handshake: a connection from another job or epoch is
  // refused.
  std::string job_id;  // HOROVOD_JOB_ID
  uint64_t epoch = 0;
  // Interfaces to listen on ([transport.tcp] interfaces,
  // HOROVOD_NETWORK_INTERFACES; the first with an IPv4 address is used);
  // empty: see net.h.
  std::vector<std::string> interfaces;
  // This rank's host for messages; empty: the bootstrap's, else
  // HOROVOD_HOSTNAME, else gethostname().
  std::string hostname;
};

// The options `config` gives (runtime.peer_timeout, heartbeat_interval,
// start_timeout, spin_time; transport.tcp.interfaces), with the job id and
// interfaces from the environment when the configuration has none.
ControlPlaneOptions control_plane_options(const Config& config);

class ControlPlane {
 public:
  // Collective: every rank of the bootstrap's world constructs one, within
  // start_timeout (else HVD_ERR_TIMEOUT naming the missing rank, and the
  // ranks already connected fail with HVD_ERR_PEER_FAILED giving why).
  ControlPlane(Bootstrap& bootstrap, const Config& config);
  ControlPlane(Bootstrap& bootstrap, const ControlPlaneOptions& options);
  ~ControlPlane();  // graceful: tells the tree this rank is leaving

  int rank() const;
  int size() const;

  // Collective over the world, called by every rank in the same order, one
  // at a time (each finishes before the next starts), from one thread at a
  // time. gather: the root receives every rank's message in rank order,
  // others get {}. broadcast: every rank gets the root's message (the
  // argument is ignored off the root).
  //
  // start_* begins this rank's part; test_* moves it on as far as the
  // links allow now, never waiting, and is true once it is done (the
  // result then in the argument). Both throw hvd::Error once a failure is
  // known.
  void start_gather(const std::vector<uint8_t>& mine);
  bool test_gather(std::vector<std::vector<uint8_t>>* gathered);
  void start_broadcast(const std::vector<uint8_t>& from_root);
  bool test_broadcast(std::vector<uint8_t>* payload);
  // Blocking forms: start, then test until done, spinning for spin_time,
  // then sleeping on the links.
  std::vector<std::vector<uint8_t>> gather(const std::vector<uint8_t>& mine);
  std::vector<uint8_t> broadcast(const std::vector<uint8_t>& from_root);

  // Waiting between tests, or idle: the sockets to poll (readable: a frame
  // came) are appended to `fds`. A test with bytes still to write wants a
  // short nap instead of a sleep (sending()).
  void wait_fds(std::vector<int>& fds) const;
  bool sending() const;
  // Rounds of the caller's (any collective step every rank takes in the
  // same order, numbered from 1): a rank waiting in round `round` calls
  // its neighbours in the tree to it, and they theirs when they wait too,
  // so a rank that sleeps with nothing to do joins at once. round_called:
  // whether a rank called this one to round `round` or a later one, in
  // what has been read from the links; receive() reads what has come (a
  // caller that slept on wait_fds calls it once one was readable).
  void summon(uint64_t round);
  bool round_called(uint64_t round) const;
  void receive();
  // Called when a summons arrives while no call of this rank's reads the
  // links (from the control plane's thread), so a
  // rank sleeping elsewhere can wake up and look.
  void on_round_called(std::function<void()> callback);

  // A failure seen here or reported by any rank; empty while healthy.
  std::optional<PeerFailure> failure() const;
  // Called once, from the control plane's thread, when a failure is known.
  void on_failure(std::function<void(const PeerFailure&)> callback);
  // Declares `rank` failed (e.g. a transport saw its connection drop) and
  // propagates it to all ranks.
  void report_failure(int rank, const std::string& reason);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd
