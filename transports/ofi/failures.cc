// How the ofi transport fails a connection, and whose fault it names: the
// peer's when libfabric says the peer or the way to it went (or it stops
// answering probes), this rank's (HVD_ERR_ABORTED) when the failure is on
// this side.
#include "common/host_access.h"
#include "fault_side.h"
#include "horovod_plugin/boundary.h"
#include "transport.h"

namespace hvd_ofi {

// HVD_ERR_ABORTED: closed, severed or failed on this side, so the requests
// name this rank.
void Transport::fail_connection(Connection* c, hvd_status status,
                                const std::string& why) {
  if (c->state == Connection::kFailed || c->state == Connection::kClosed) {
    return;
  }
  c->state = Connection::kFailed;
  c->failure = status;
  c->failure_text = why;
  if (!why.empty()) hvd_transport_common::log(host_, HVD_LOG_WARNING, why);
  while (Request* r = c->pending.front()) {
    if (r->kind == Request::kRecv && r->in_fabric) fi_cancel(&ep_->fid, r);
    finish(r, status, status == HVD_ERR_ABORTED ? rank_ : c->peer_rank, 0);
  }
}

// Probes silent peers while work on them is pending; past peer_timeout of
// silence the peer is dead. Providers over tcp report no connection loss on
// a reliable-datagram endpoint, so silence is the signal.
void Transport::check_liveness() {
  if (pending_total_ == 0) return;
  auto now = Clock::now();
  auto interval = std::chrono::milliseconds(options_.ping_interval_ms);
  auto timeout = std::chrono::milliseconds(options_.peer_timeout_ms);
  for (Connection* c : by_id_) {
    if (c == nullptr || c->state != Connection::kReady || c->pending.empty()) {
      continue;
    }
    if (now - c->last_heard > timeout) {
      fail_connection(c, HVD_ERR_PEER_FAILED,
                      "ofi: rank " + std::to_string(c->peer_rank) +
                          " has not answered for " +
                          std::to_string(options_.peer_timeout_ms) +
                          " ms; it is taken for dead");
    } else if (now - c->last_heard > interval &&
               now - c->last_ping > interval) {
      c->last_ping = now;
      send_control(c->addr, control(kPing, c));
    }
  }
}

void Transport::fail_transfer(Connection* c, int err) {
  const bool theirs = peer_failure(err);
  fail_connection(c, theirs ? HVD_ERR_PEER_FAILED : HVD_ERR_ABORTED,
                  "ofi: a transfer with rank " + std::to_string(c->peer_rank) +
                      " failed" + (theirs ? "" : " on this side") + ": " +
                      fi_strerror(err));
}

hvd_status Transport::refuse_post(Connection* c, const std::string& what,
                                  int rc) {
  const int err = rc < 0 ? -rc : rc;
  fail_transfer(c, err);
  return hvd_plugin::refuse(c->failure,
                            "ofi: " + what + ": " + fi_strerror(err));
}

}  // namespace hvd_ofi
