// The mpi transport of one process: listeners and connections (a handshake
// on channel 0 of the shared communicator, see library.h), MPI_Isend /
// MPI_Irecv on the connection's channels, requests, abort. MPI has no file
// descriptor to sleep on, so there is no wait fd; test() drives MPI's
// progress. MPI moves a non-blocking collective only inside MPI calls and
// the core naps between tests of a transport without a wait fd, so test()
// of a collective keeps testing for up to 2 ms (test_collective).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "horovod/transport.h"
#include "horovod_plugin/abort_latch.h"
#include "library.h"
#include "options.h"

namespace hvd_mpi {

class Transport;

// A communicator of the collectives extension (collectives.h).
struct Comm {
  Transport* transport = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  hvd_plugin::AbortLatch abort;  // comm_abort
};

struct Listener : ControlSink {
  Transport* transport = nullptr;
  uint32_t id = 0;
  struct Hello {
    Control message;
    int source;
  };
  std::deque<Hello> hellos;
  void deliver(const Control& message, int source) override {
    hellos.push_back({message, source});
  }
};

struct Connection : ControlSink {
  enum class State { kConnecting, kReady, kFailed };
  Transport* transport = nullptr;
  State state = State::kConnecting;
  hvd_status failure = HVD_OK;
  std::string failure_text;
  uint64_t epoch = 0;
  int peer_mpi = -1;
  int32_t peer_rank = -1;         // world rank
  uint32_t channel = 0;           // where the peer sends to us
  uint32_t peer_channel = 0;      // where we send to the peer
  uint32_t sends = 0, recvs = 0;  // in flight, for back-pressure
  bool closed = false;
  void deliver(const Control& message, int source) override;
};

struct Request {
  enum class Kind { kSend, kRecv, kCollective };
  Transport* transport = nullptr;
  Kind kind = Kind::kSend;
  Connection* conn = nullptr;  // point-to-point only
  Comm* comm = nullptr;        // collectives only
  const char* what = "";       // "MPI_Iallreduce", for messages
  MPI_Request mpi = MPI_REQUEST_NULL;
  uint64_t bytes = 0;  // posted (collective: written here)
  // Collectives: when test() first found it unfinished (its timeout runs
  // from there).
  std::chrono::steady_clock::time_point first_unfinished;
  std::vector<int> counts[4];  // the int arrays MPI reads until completion
  Request* next_free = nullptr;
};

class Transport {
 public:
  explicit Transport(const hvd_host* host);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const hvd_host* host() const { return host_; }
  Library& library() const { return library_; }
  const Options& options() const { return options_; }
  void properties(hvd_transport_properties* props) const;

  hvd_status listen(void* handle, Listener** out);
  hvd_status accept(Listener* listener, const hvd_conn_info* info,
                    Connection** out);
  hvd_status connect(const void* handle, const hvd_conn_info* info,
                     Connection** out);
  void close_listener(Listener* listener);
  void close_connection(Connection* conn);
  hvd_status conn_test(Connection* conn);

  hvd_status isend(Connection* c, const void* buf, size_t bytes, uint64_t tag,
                   Request** out);
  hvd_status irecv(Connection* c, void* buf, size_t bytes, uint64_t tag,
                   Request** out);
  hvd_status test(Request* req, int32_t* done, hvd_completion* out);

  void progress() { library_.poll(); }
  int wait_fd() const { return -1; }
  hvd_status wait_arm() { return HVD_AGAIN; }
  void abort(hvd_status reason, int32_t peer) { abort_.trip(reason, peer); }
  // Test only (fault_hook.h): aborts naming this rank, as a rank whose own
  // links went down (MPI has no connection to cut: the peers see silence).
  void sever() { abort(HVD_ERR_ABORTED, rank()); }
  int32_t rank() const;
  // HVD_OK, or the first abort's reason (its peer in *peer).
  hvd_status aborted(int32_t* peer = nullptr) const {
    return abort_.reason(peer);
  }

  // Requests: taken for a post, given back when test() reports them.
  Request* take_request(Request::Kind kind);
  void give_back(Request* req);
  // An MPI request that can no longer be waited for (after an abort).
  void abandon(Request* req);

 private:
  // The status for MPI's error `code`: HVD_ERR_ABORTED (this transport
  // aborts itself naming this rank) unless the peer is at fault.
  hvd_status failed_here_or_there(int code);
  // MPI_Test on `req` until it completes, fails, is aborted or has had its
  // time for this call; MPI_Test's result.
  int test_collective(Request* req, int* flag, MPI_Status* status);

  const hvd_host* host_;
  Options options_;
  Library& library_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<std::unique_ptr<Request>> requests_;
  Request* free_ = nullptr;
  // Count arrays of abandoned collectives, which MPI may still read.
  std::vector<std::vector<int>> abandoned_counts_;
  hvd_plugin::AbortLatch abort_;
};

}  // namespace hvd_mpi
