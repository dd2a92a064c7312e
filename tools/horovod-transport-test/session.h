// What a case works with: one fresh transport instance of this rank,
// connected to every other rank, and the means to post requests and wait
// for them (spinning briefly, then sleeping on the transport's wait fd).
// Every case starts its own sessions, so a failed case leaves nothing
// behind for the next.
#pragma once

#include <chrono>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "horovod/transport.h"
#include "suite.h"
#include "world.h"

namespace hvd_conformance {

// Thrown by a case that fails or does not apply.
struct CaseFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct CaseSkip : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail_case(const std::string& why);
inline void check(bool ok, const std::string& why) {
  if (!ok) fail_case(why);
}

struct CaseContext {
  CaseContext(World& w, const hvd_transport_api& a, const SuiteOptions& o)
      : world(w), api(a), options(o) {}
  World& world;
  const hvd_transport_api& api;
  const SuiteOptions& options;
  hvd_transport_properties props{};
  std::string name;  // of the running case, for bootstrap keys
  int round = 0;     // bumps each time a case publishes a key
  std::string key(const std::string& what) {
    return "hvd-conformance." + name + "." + what + "." +
           std::to_string(round++);
  }
  std::chrono::seconds timeout() const {
    return std::chrono::seconds(options.timeout_s);
  }
  // The world's collectives, keyed by case and order within it.
  std::vector<Bytes> allgather(const Bytes& mine) {
    return world.allgather(key("allgather"), mine, timeout());
  }
  void barrier() { world.barrier(key("barrier"), timeout()); }
};

// "HVD_ERR_PEER_FAILED" style names, for messages.
std::string status_text(hvd_status status);

// One request and what became of it.
struct Op {
  hvd_request* req = nullptr;
  bool done = false;
  hvd_completion result{};
  std::string what;  // "send of 17 bytes to rank 1 (tag 3)"
};

enum class ConnectOrder {
  kConnectFirst,  // connectors connect, then (after a barrier) accepts
  kAcceptFirst,   // acceptors find nobody (HVD_AGAIN), then connects
  kTogether
};

class Session {
 public:
  explicit Session(CaseContext& ctx);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  hvd_transport* transport() const { return t_; }
  const hvd_transport_api& api() const { return api_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  uint64_t epoch() const { return epoch_; }

  // listen(), then every rank's handle.
  void listen();
  const Bytes& handle(int rank) const { return handles_[rank]; }
  hvd_listener* listener() const { return listener_; }

  // Connects every pair (the higher rank connects to the lower) and checks
  // that conn_peer names the right rank on both ends.
  void connect_all(ConnectOrder order);
  hvd_conn* conn(int peer) const { return conns_[peer]; }
  std::vector<int> peers() const;

  // Post a request, retrying while the transport answers HVD_AGAIN; the Op
  // lives until the session ends.
  Op* send(int peer, const void* buf, size_t bytes, uint64_t tag);
  Op* recv(int peer, void* buf, size_t bytes, uint64_t tag);
  // A single try: the status isend/irecv returned (HVD_AGAIN included); on
  // HVD_OK *out is the posted Op.
  hvd_status try_send(int peer, const void* buf, size_t bytes, uint64_t tag,
                      Op** out);

  // Tests `op` once; whether it is done now.
  bool test(Op* op);
  // Until every op is done; fails the case after the timeout naming what
  // is still pending.
  void wait(const std::vector<Op*>& ops);
  void wait(Op* op) { wait(std::vector<Op*>{op}); }
  // Expects a completed op to have succeeded with `bytes`.
  static void expect_ok(const Op* op, uint64_t bytes);

  // Sleeps on the wait fd (or naps) for at most `limit`: one round of the
  // wait loop after its spin.
  void sleep(std::chrono::milliseconds limit);

  // Forget the transport without finalize (a rank that died).
  void abandon() { t_ = nullptr; }
  // Closes every connection and the listener, then finalizes.
  void close();

  std::string last_error() const;

 private:
  CaseContext& ctx_;
  const hvd_transport_api& api_;
  hvd_transport* t_ = nullptr;
  int rank_, size_;
  uint64_t epoch_ = 0;
  hvd_listener* listener_ = nullptr;
  std::vector<Bytes> handles_;
  std::vector<hvd_conn*> conns_;
  std::deque<Op> ops_;
};

}  // namespace hvd_conformance
