// One ucx connection: an endpoint to the peer's worker, the set-up
// exchange, and the requests posted on it.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "horovod/transport.h"
#include "protocol.h"
#include "request.h"

namespace hvd_ucx {

class Transport;

class Connection {
 public:
  enum class State { kConnecting, kAccepting, kAcknowledging, kReady, kFailed };

  // Connector side: an endpoint to `address`, a Hello on its way.
  Connection(Transport& t, uint32_t id, const hvd_conn_info& info,
             const void* address, uint32_t listener_id);
  // Acceptor side: the Hello `message` is being received.
  Connection(Transport& t, uint32_t id, const hvd_conn_info& info,
             ucp_tag_message_h message, size_t hello_bytes);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Transport& transport() const { return t_; }
  uint32_t id() const { return id_; }
  int32_t peer_rank() const { return peer_rank_; }
  State state() const { return state_; }
  hvd_status failure() const { return failure_; }
  int32_t failure_peer() const { return failure_peer_; }

  // Drives the set-up: HVD_AGAIN, HVD_OK, or why it failed.
  hvd_status handshake();

  hvd_status isend(const void* buf, size_t bytes, uint64_t tag, ucp_mem_h memh,
                   Request** out);
  hvd_status irecv(void* buf, size_t bytes, uint64_t tag, ucp_mem_h memh,
                   Request** out);

  // Every pending request ends with `status` blaming `peer`; the endpoint is
  // dropped. Later requests fail the same way at once.
  void fail(hvd_status status, int32_t peer);
  // The endpoint's error handler saw `status`.
  void endpoint_failed(ucs_status_t status);
  // A request's UCX part ended.
  void finished(Request* r);

  // The connection goes away: the endpoint is flushed and closed, pending
  // receives are cancelled.
  void close();

 private:
  void create_endpoint(const void* address);
  Request* post_recv(void* buf, size_t bytes, uint64_t tag, bool user,
                     ucp_mem_h memh);
  Request* post_send(const void* buf, size_t bytes, uint64_t tag, bool user,
                     ucp_mem_h memh);
  // A set-up message, kept in the request until UCX is done with it.
  Request* post_send(std::vector<uint8_t> message, uint64_t tag);
  // Detaches `r` from the connection; it is freed once UCX is done.
  void forget(Request* r);
  void drop_setup();
  hvd_status finish_accept();
  hvd_status finish_connect();
  hvd_status finish_ack();
  // The set-up failed: conn_test reports `status` from now on.
  hvd_status set_failed(hvd_status status, int32_t peer,
                        const std::string& why);

  Transport& t_;
  uint32_t id_;
  int32_t self_rank_;
  int32_t expected_rank_;
  uint64_t epoch_;
  State state_;
  ucp_ep_h ep_ = nullptr;
  uint32_t peer_id_ = 0;
  int32_t peer_rank_ = -1;
  hvd_status failure_ = HVD_OK;
  int32_t failure_peer_ = -1;

  std::string why_;                // the failure, for last_error
  bool dropped_ = false;           // fail() ran: the endpoint is gone
  Request* setup_recv_ = nullptr;  // the Ack (connector) or Hello (acceptor)
  Request* setup_send_ = nullptr;  // the Hello (connector) or Ack (acceptor)

  PendingRequests pending_;
  uint32_t sends_ = 0;
  uint32_t recvs_ = 0;
};

}  // namespace hvd_ucx
