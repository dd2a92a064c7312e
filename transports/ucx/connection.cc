#include "connection.h"

#include <cstring>
#include <string>

#include "common/host_access.h"
#include "horovod_plugin/boundary.h"
#include "transport.h"

namespace hvd_ucx {

using hvd_plugin::fail;
using hvd_plugin::refuse;

namespace {

void send_done(void* request, ucs_status_t status, void* user_data) {
  auto* r = static_cast<Request*>(user_data);
  ucp_request_free(request);
  r->transport->ucx_finished(r, status, r->bytes);
}

void recv_done(void* request, ucs_status_t status,
               const ucp_tag_recv_info_t* info, void* user_data) {
  auto* r = static_cast<Request*>(user_data);
  uint64_t length = info != nullptr ? info->length : 0;
  ucp_request_free(request);
  r->transport->ucx_finished(r, status, length);
}

ucp_request_param_t params(Request* r, bool send, ucp_mem_h memh) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  if (send) {
    p.cb.send = send_done;
  } else {
    p.cb.recv = recv_done;
  }
  p.user_data = r;
  if (memh != nullptr) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = memh;
  }
  return p;
}

// A valid address for zero-byte transfers.
uint8_t empty_buffer[1];

}  // namespace

Connection::Connection(Transport& t, uint32_t id, const hvd_conn_info& info,
                       const void* address, uint32_t listener_id)
    : t_(t),
      id_(id),
      self_rank_(info.self_rank),
      expected_rank_(info.peer_rank),
      epoch_(info.epoch),
      state_(State::kConnecting) {
  create_endpoint(address);
  setup_recv_ = post_recv(nullptr, sizeof(Ack), ack_tag(id_), false, nullptr);
  Hello h{};
  h.magic = kHelloMagic;
  h.version = kProtocolVersion;
  h.rank = self_rank_;
  h.expected_rank = expected_rank_;
  h.conn_id = id_;
  h.address_bytes = static_cast<uint32_t>(t_.address().size());
  h.epoch = epoch_;
  std::vector<uint8_t> hello(sizeof(h) + t_.address().size());
  std::memcpy(hello.data(), &h, sizeof(h));
  std::memcpy(hello.data() + sizeof(h), t_.address().data(),
              t_.address().size());
  setup_send_ = post_send(std::move(hello), hello_tag(listener_id));
}

Connection::Connection(Transport& t, uint32_t id, const hvd_conn_info& info,
                       ucp_tag_message_h message, size_t hello_bytes)
    : t_(t),
      id_(id),
      self_rank_(info.self_rank),
      expected_rank_(info.peer_rank),
      epoch_(info.epoch),
      state_(State::kAccepting) {
  Request* r = t_.new_request(this, false, false, hello_bytes);
  r->storage.resize(hello_bytes == 0 ? 1 : hello_bytes);
  pending_.push_back(r);
  ucp_request_param_t p = params(r, false, nullptr);
  ucs_status_ptr_t sp = ucp_tag_msg_recv_nbx(t_.worker(), r->storage.data(),
                                             hello_bytes, message, &p);
  setup_recv_ = r;
  if (UCS_PTR_IS_ERR(sp)) {
    t_.ucx_finished(r, UCS_PTR_STATUS(sp), 0);
  } else {
    r->ucx = sp;
  }
}

Connection::~Connection() = default;

void Connection::create_endpoint(const void* address) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                 UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = static_cast<const ucp_address_t*>(address);
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = endpoint_error;
  p.err_handler.arg = t_.endpoint_owner(id_);
  ucs_status_t st = ucp_ep_create(t_.worker(), &p, &ep_);
  if (st != UCS_OK) {
    ep_ = nullptr;
    fail_ucs("ucp_ep_create", st);
  }
}

Request* Connection::post_recv(void* buf, size_t bytes, uint64_t tag, bool user,
                               ucp_mem_h memh) {
  Request* r = t_.new_request(this, false, user, bytes);
  if (buf == nullptr) {
    r->storage.resize(bytes == 0 ? 1 : bytes);
    buf = r->storage.data();
  }
  pending_.push_back(r);
  if (user) ++recvs_;
  ucp_request_param_t p = params(r, false, memh);
  ucs_status_ptr_t sp =
      ucp_tag_recv_nbx(t_.worker(), buf, bytes, tag, kFullMask, &p);
  if (UCS_PTR_IS_ERR(sp)) {
    t_.ucx_finished(r, UCS_PTR_STATUS(sp), 0);
  } else {
    r->ucx = sp;
  }
  return r;
}

Request* Connection::post_send(const void* buf, size_t bytes, uint64_t tag,
                               bool user, ucp_mem_h memh) {
  Request* r = t_.new_request(this, true, user, bytes);
  pending_.push_back(r);
  if (user) ++sends_;
  ucp_request_param_t p = params(r, true, memh);
  ucs_status_ptr_t sp = ucp_tag_send_nbx(ep_, buf, bytes, tag, &p);
  if (UCS_PTR_IS_ERR(sp)) {
    t_.ucx_finished(r, UCS_PTR_STATUS(sp), 0);
  } else {
    r->ucx = sp;
  }
  return r;
}

Request* Connection::post_send(std::vector<uint8_t> message, uint64_t tag) {
  Request* r = t_.new_request(this, true, false, message.size());
  r->storage = std::move(message);
  pending_.push_back(r);
  ucp_request_param_t p = params(r, true, nullptr);
  ucs_status_ptr_t sp =
      ucp_tag_send_nbx(ep_, r->storage.data(), r->storage.size(), tag, &p);
  if (UCS_PTR_IS_ERR(sp)) {
    t_.ucx_finished(r, UCS_PTR_STATUS(sp), 0);
  } else {
    r->ucx = sp;
  }
  return r;
}

void Connection::drop_setup() {
  if (setup_recv_ != nullptr) {
    Request* r = setup_recv_;
    setup_recv_ = nullptr;
    forget(r);
  }
  if (setup_send_ != nullptr) {
    Request* r = setup_send_;
    setup_send_ = nullptr;
    forget(r);
  }
}

void Connection::forget(Request* r) {
  pending_.remove(r);
  if (r->user && !r->ucx_done) --(r->send ? sends_ : recvs_);
  r->conn = nullptr;
  if (!r->send && r->ucx != nullptr) ucp_request_cancel(t_.worker(), r->ucx);
  t_.forget(r);
}

hvd_status Connection::set_failed(hvd_status status, int32_t peer,
                                  const std::string& why) {
  state_ = State::kFailed;
  if (failure_ == HVD_OK) {
    failure_ = status;
    failure_peer_ = peer;
    why_ = why;
  }
  return refuse(failure_, why_);
}

hvd_status Connection::handshake() {
  switch (state_) {
    case State::kReady:
      return HVD_OK;
    case State::kFailed:
      return refuse(failure_, why_);
    case State::kConnecting:
      return finish_connect();
    case State::kAccepting:
      return finish_accept();
    case State::kAcknowledging:
      return finish_ack();
  }
  return HVD_ERR_INTERNAL;
}

hvd_status Connection::finish_connect() {
  Request* r = setup_recv_;
  if (!r->ucx_done) return HVD_AGAIN;
  std::string who = "ucx: connection to rank " + std::to_string(expected_rank_);
  if (r->ucx_status != UCS_OK || r->length != sizeof(Ack)) {
    std::string why = who + ": no answer to the Hello (" +
                      ucs_status_string(r->ucx_status) + ")";
    drop_setup();
    return set_failed(HVD_ERR_PEER_FAILED, expected_rank_, why);
  }
  Ack ack;
  std::memcpy(&ack, r->storage.data(), sizeof(ack));
  drop_setup();
  if (ack.magic != kAckMagic) {
    return set_failed(HVD_ERR_INTERNAL, expected_rank_,
                      who + ": the answer to the Hello is not an Ack");
  }
  if (ack.status != HVD_OK) {
    return set_failed(
        ack.status, ack.rank,
        who + ": refused by rank " + std::to_string(ack.rank) +
            (ack.status == HVD_ERR_EPOCH_MISMATCH
                 ? " at epoch " + std::to_string(ack.epoch) +
                       " (this end is at epoch " + std::to_string(epoch_) + ")"
                 : std::string()));
  }
  if (expected_rank_ >= 0 && ack.rank != expected_rank_) {
    return set_failed(
        HVD_ERR_MISMATCH, ack.rank,
        who + ": the listener belongs to rank " + std::to_string(ack.rank));
  }
  if (ack.epoch != epoch_) {
    return set_failed(HVD_ERR_EPOCH_MISMATCH, ack.rank,
                      who + ": the peer is at epoch " +
                          std::to_string(ack.epoch) + ", this end at " +
                          std::to_string(epoch_));
  }
  peer_rank_ = ack.rank;
  peer_id_ = ack.conn_id;
  state_ = State::kReady;
  return HVD_OK;
}

hvd_status Connection::finish_accept() {
  Request* r = setup_recv_;
  if (!r->ucx_done) return HVD_AGAIN;
  Hello h{};
  bool ok = r->ucx_status == UCS_OK && r->length >= sizeof(Hello);
  if (ok) {
    std::memcpy(&h, r->storage.data(), sizeof(h));
    ok = h.magic == kHelloMagic && h.version == kProtocolVersion &&
         sizeof(h) + h.address_bytes == r->length;
  }
  if (!ok) {
    drop_setup();
    return set_failed(HVD_ERR_INTERNAL, -1,
                      "ucx: accept: a malformed Hello arrived");
  }
  std::vector<uint8_t> address(r->storage.begin() + sizeof(h),
                               r->storage.end());
  drop_setup();
  peer_rank_ = h.rank;
  peer_id_ = h.conn_id;
  create_endpoint(address.data());
  hvd_status refusal = HVD_OK;
  std::string why;
  if (h.epoch != epoch_) {
    refusal = HVD_ERR_EPOCH_MISMATCH;
    why = "ucx: rank " + std::to_string(h.rank) + " connected from epoch " +
          std::to_string(h.epoch) + "; this end is at epoch " +
          std::to_string(epoch_);
  } else if (h.expected_rank >= 0 && h.expected_rank != self_rank_) {
    refusal = HVD_ERR_MISMATCH;
    why = "ucx: rank " + std::to_string(h.rank) + " meant to reach rank " +
          std::to_string(h.expected_rank) + ", not this one (rank " +
          std::to_string(self_rank_) + ")";
  }
  Ack ack{};
  ack.magic = kAckMagic;
  ack.status = refusal;
  ack.rank = self_rank_;
  ack.conn_id = id_;
  ack.epoch = epoch_;
  std::vector<uint8_t> message(sizeof(ack));
  std::memcpy(message.data(), &ack, sizeof(ack));
  setup_send_ = post_send(std::move(message), ack_tag(peer_id_));
  if (refusal != HVD_OK) return set_failed(refusal, h.rank, why);
  state_ = State::kAcknowledging;
  return finish_ack();
}

hvd_status Connection::finish_ack() {
  // Ready once the Ack is out: UCX sends only while this end progresses,
  // and the caller may stop calling in here once the connection is up.
  if (!setup_send_->ucx_done) return HVD_AGAIN;
  ucs_status_t st = setup_send_->ucx_status;
  drop_setup();
  if (st != UCS_OK) {
    return set_failed(HVD_ERR_PEER_FAILED, peer_rank_,
                      "ucx: accepting the connection of rank " +
                          std::to_string(peer_rank_) + ": the Ack failed (" +
                          ucs_status_string(st) + ")");
  }
  state_ = State::kReady;
  return HVD_OK;
}

hvd_status Connection::isend(const void* buf, size_t bytes, uint64_t tag,
                             ucp_mem_h memh, Request** out) {
  if (failure_ != HVD_OK && dropped_) {
    Request* r = t_.new_request(this, true, true, bytes);
    r->ucx_done = true;
    t_.complete(r, failure_, failure_peer_, 0);
    *out = r;
    return HVD_OK;
  }
  if (state_ != State::kReady) {
    return refuse(
        state_ == State::kFailed ? failure_ : HVD_ERR_INVALID_ARGUMENT,
        "ucx: isend on a connection that is not established");
  }
  if (sends_ >= t_.options().max_requests) return HVD_AGAIN;
  if (buf == nullptr) buf = empty_buffer;
  *out = post_send(buf, bytes, data_tag(peer_id_, tag), true, memh);
  return HVD_OK;
}

hvd_status Connection::irecv(void* buf, size_t bytes, uint64_t tag,
                             ucp_mem_h memh, Request** out) {
  if (failure_ != HVD_OK && dropped_) {
    Request* r = t_.new_request(this, false, true, bytes);
    r->ucx_done = true;
    t_.complete(r, failure_, failure_peer_, 0);
    *out = r;
    return HVD_OK;
  }
  if (state_ != State::kReady) {
    return refuse(
        state_ == State::kFailed ? failure_ : HVD_ERR_INVALID_ARGUMENT,
        "ucx: irecv on a connection that is not established");
  }
  if (recvs_ >= t_.options().max_requests) return HVD_AGAIN;
  if (buf == nullptr) buf = empty_buffer;
  *out = post_recv(buf, bytes, data_tag(id_, tag), true, memh);
  return HVD_OK;
}

void Connection::finished(Request* r) {
  pending_.remove(r);
  if (r->user) --(r->send ? sends_ : recvs_);
}

void Connection::fail(hvd_status status, int32_t peer) {
  if (dropped_) return;
  dropped_ = true;
  // Set first: cancelled requests may complete inside the calls below.
  state_ = State::kFailed;
  failure_ = status;
  failure_peer_ = peer;
  why_ =
      "ucx: the connection with rank " + std::to_string(peer_rank_) + " failed";
  std::vector<Request*> recvs;
  for (Request* r = pending_.front(); r != nullptr;
       r = PendingRequests::next(r)) {
    if (!r->send && r->ucx != nullptr) recvs.push_back(r);
  }
  for (Request* r : recvs) {
    if (r->ucx != nullptr) ucp_request_cancel(t_.worker(), r->ucx);
  }
  if (ep_ != nullptr) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucp_ep_h ep = ep_;
    ep_ = nullptr;
    t_.retire(ucp_ep_close_nbx(ep, &p));
  }
}

void Connection::endpoint_failed(ucs_status_t status) {
  int32_t peer = peer_rank_ >= 0 ? peer_rank_ : expected_rank_;
  const bool theirs = peer_failure(status);
  hvd_transport_common::log(
      t_.host(), HVD_LOG_INFO,
      "ucx: the connection with rank " + std::to_string(peer) + " failed" +
          (theirs ? "" : " on this side") + ": " + ucs_status_string(status));
  if (theirs) {
    fail(HVD_ERR_PEER_FAILED, peer);
  } else {
    fail(HVD_ERR_ABORTED, t_.rank());
  }
}

void Connection::close() {
  drop_setup();
  std::vector<Request*> all;
  for (Request* r = pending_.front(); r != nullptr;
       r = PendingRequests::next(r)) {
    all.push_back(r);
  }
  for (Request* r : all) forget(r);
  if (ep_ != nullptr) {
    ucp_request_param_t p{};
    ucp_ep_h ep = ep_;
    ep_ = nullptr;
    t_.retire(ucp_ep_close_nbx(ep, &p));
  }
}

}  // namespace hvd_ucx
