// The gloo transport of one process: a Gloo TCP device, the handshake
// listeners, the connections, the wait fd and abort.
#pragma once

#include <gloo/transport/device.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/comm_registry.h"
#include "horovod/transport.h"
#include "horovod_plugin/abort_latch.h"
#include "options.h"
#include "request.h"

namespace hvd_gloo {

class Comm;
class Connection;

struct Listener {
  Transport* transport;
  int fd;
};

class Transport {
 public:
  explicit Transport(const hvd_host* host);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const hvd_host* host() const { return host_; }
  const Options& options() const { return options_; }
  const std::shared_ptr<gloo::transport::Device>& device() const {
    return device_;
  }
  int32_t rank() const;
  void properties(hvd_transport_properties* props) const;

  hvd_status listen(void* handle, Listener** out);
  hvd_status accept(Listener* listener, const hvd_conn_info* info,
                    Connection** out);
  hvd_status connect(const void* handle, const hvd_conn_info* info,
                     Connection** out);
  void close_listener(Listener* listener);
  void close_connection(Connection* conn);
  hvd_status conn_test(Connection* conn);

  void progress() {}
  hvd_status test(Request* req, int32_t* done, hvd_completion* out);
  int wait_fd() const { return event_fd_; }
  hvd_status wait_arm();

  // Any thread. Every connection's pending requests fail with `reason`.
  void abort(hvd_status reason, int32_t peer);
  // Test only (fault_hook.h): aborts naming this rank and closes every
  // connection's pair from inside, as a rank whose own links went down.
  void sever();
  // HVD_OK, or the reason of an abort (and its peer).
  hvd_status aborted(int32_t* peer = nullptr) const {
    return abort_.reason(peer);
  }

  // comm_create: the communicator being built for `team` (started on the
  // first call), until comms().forget_pending; live ones are registered
  // there too, so that abort reaches them.
  Comm* pending_comm(const hvd_team& team);
  hvd_transport_common::CommRegistry<Comm>& comms() { return comms_; }

  // A rank of `members` whose point-to-point connection failed through
  // its fault, watching them for up to `patience` (Gloo's collectives do
  // not say which peer failed; the connections see the same sockets go);
  // -1 if none did.
  int32_t failed_member(const std::vector<int32_t>& members,
                        std::chrono::milliseconds patience);

  // From any of the plugin's threads.
  Request* new_request(std::shared_ptr<std::atomic<uint32_t>> in_flight);
  void complete(Request* r, hvd_status status, int32_t peer, uint64_t bytes);
  // A holder's hold on `r` (Request::holders); the last one frees it.
  void hold(Request* r) { r->holders.fetch_add(1); }
  void release(Request* r);

 private:
  const hvd_host* host_;
  Options options_;
  std::shared_ptr<gloo::transport::Device> device_;
  uint32_t ipv4_ = 0;  // of options_.interface, network order
  int event_fd_ = -1;
  std::atomic<uint64_t> completed_since_arm_{0};

  std::mutex mu_;  // connections_, listeners_
  std::unordered_set<Connection*> connections_;
  std::mutex live_mu_;  // taken under a connection's lock, never around one
  std::unordered_set<Request*> live_;
  std::unordered_set<Listener*> listeners_;
  hvd_transport_common::CommRegistry<Comm> comms_;
  hvd_plugin::AbortLatch abort_;
};

}  // namespace hvd_gloo
