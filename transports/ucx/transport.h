// The ucx transport of one process: a UCP context and worker, listeners,
// connections, abort, and the worker's event fd as the wait fd.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fault_side.h"
#include "horovod/transport.h"
#include "horovod_plugin/abort_latch.h"
#include "options.h"
#include "request.h"

namespace hvd_ucx {

class Connection;

struct Listener {
  Transport* transport;
  uint32_t id;
};

// What an endpoint's error handler is given: the connection is looked up by
// number, so an error reported after the connection closed finds nothing.
struct EndpointOwner {
  Transport* transport;
  uint32_t conn_id;
};

class Transport {
 public:
  explicit Transport(const hvd_host* host);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const hvd_host* host() const { return host_; }
  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  const std::vector<uint8_t>& address() const { return address_; }
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

  void progress();
  hvd_status test(Request* req, int32_t* done, hvd_completion* out);
  int wait_fd() const { return event_fd_; }
  hvd_status wait_arm();

  void abort(hvd_status reason, int32_t peer);  // any thread
  hvd_status aborted();  // applies a pending abort; its reason or HVD_OK
  // Test only (fault_hook.h): aborts naming this rank and drops every
  // endpoint at once, as a rank whose own links went down.
  void sever();
  int32_t rank() const;

  Request* new_request(Connection* conn, bool send, bool user, uint64_t bytes);
  // UCX's callback for `r` ran.
  void ucx_finished(Request* r, ucs_status_t status, uint64_t length);
  // The result test() will report.
  void complete(Request* r, hvd_status status, int32_t peer, uint64_t bytes);
  // Nobody will test `r`: free it once UCX is done with it.
  void forget(Request* r);
  EndpointOwner* endpoint_owner(uint32_t conn_id);
  void endpoint_failed(uint32_t conn_id, ucs_status_t status);
  // A closing endpoint's request, progressed until it ends.
  void retire(ucs_status_ptr_t close_request);

 private:
  void apply_abort(hvd_status reason, int32_t peer);
  void handle_failures();
  uint32_t next_id();
  void publish_address();

  const hvd_host* host_;
  Options options_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;
  std::vector<uint8_t> address_;
  std::string address_key_;  // bootstrap key of the published address

  uint32_t last_id_ = 0;
  std::unordered_map<uint32_t, Connection*> connections_;
  std::unordered_set<Listener*> listeners_;
  std::unordered_set<Request*> live_;
  std::vector<std::unique_ptr<EndpointOwner>> owners_;
  std::vector<void*> closing_;
  std::vector<std::pair<uint32_t, ucs_status_t>> failed_;
  uint64_t completed_since_arm_ = 0;

  hvd_plugin::AbortLatch abort_;
};

// The endpoints' error handler (its argument is an EndpointOwner).
void endpoint_error(void* arg, ucp_ep_h ep, ucs_status_t status);

// "UCX: <what>: <ucs_status_string>" as HVD_ERR_SYSTEM.
[[noreturn]] void fail_ucs(const std::string& what, ucs_status_t status);

}  // namespace hvd_ucx
