#include "transport.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/host_access.h"
#include "connection.h"
#include "horovod_plugin/boundary.h"
#include "protocol.h"

namespace hvd_ucx {

using hvd_plugin::fail;
using hvd_plugin::refuse;

namespace {

// Distinguishes the instances of one process in bootstrap keys.
std::atomic<uint32_t> instance_count{0};

// How long conn_close waits for the endpoint's flush.
constexpr auto kCloseLinger = std::chrono::milliseconds(200);

}  // namespace

void endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* owner = static_cast<EndpointOwner*>(arg);
  owner->transport->endpoint_failed(owner->conn_id, status);
}

void fail_ucs(const std::string& what, ucs_status_t status) {
  fail(HVD_ERR_SYSTEM, "ucx: " + what + ": " + ucs_status_string(status));
}

Transport::Transport(const hvd_host* host)
    : host_(host), options_(read_options(host)) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) fail_ucs("ucp_config_read", st);
  for (const Options::UcxSetting& s : options_.ucx) {
    st = ucp_config_modify(config, s.name.c_str(), s.value.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      std::string message = "UCX refuses " + s.name + "=\"" + s.value +
                            "\": " + ucs_status_string(st);
      hvd_status status = HVD_ERR_CONFIG;
      if (host_->config_error != nullptr) {
        status =
            host_->config_error(host_->ctx, s.key.c_str(), message.c_str());
        if (status == HVD_OK) status = HVD_ERR_CONFIG;
      }
      fail(status, "[transport.ucx] key '" + s.key + "': " + message);
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.name = "horovod";
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) fail_ucs("ucp_init", st);

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // Called from one thread at a time, not always the same one (the
  // background thread, or a caller driving in its place).
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(context_, &wp, &worker_);
  if (st != UCS_OK) {
    ucp_cleanup(context_);
    fail_ucs("ucp_worker_create", st);
  }
  st = ucp_worker_get_efd(worker_, &event_fd_);
  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  if (st == UCS_OK)
    st = ucp_worker_get_address(worker_, &address, &address_bytes);
  if (st != UCS_OK) {
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    fail_ucs("worker event fd and address", st);
  }
  auto* bytes = reinterpret_cast<const uint8_t*>(address);
  address_.assign(bytes, bytes + address_bytes);
  ucp_worker_release_address(worker_, address);
  address_key_ = "worker." + std::to_string(getpid()) + "." +
                 std::to_string(instance_count.fetch_add(1));
}

Transport::~Transport() {
  // Whatever is still connected is dropped without waiting for the peers.
  std::vector<Connection*> conns;
  for (auto& [id, c] : connections_) conns.push_back(c);
  for (Connection* c : conns) {
    c->fail(HVD_ERR_SHUT_DOWN, -1);
    c->close();
    delete c;
  }
  connections_.clear();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!closing_.empty() && std::chrono::steady_clock::now() < deadline) {
    progress();
  }
  for (void* r : closing_) ucp_request_free(r);
  for (Listener* l : listeners_) delete l;
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
  for (Request* r : live_) delete r;
}

void Transport::properties(hvd_transport_properties* props) const {
  *props = hvd_transport_properties{};
  props->struct_size = HVD_STRUCT_SIZE(hvd_transport_properties, handle_bytes);
  props->mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);
  // UCX may run an async thread (UCX_ASYNC_MODE=thread) and its
  // transports' own.
  props->flags = HVD_TRANSPORT_NEEDS_PROGRESS | HVD_TRANSPORT_OWN_THREADS;
  props->tag_bits = kTagBits;
  props->max_requests = options_.max_requests;
  props->max_message_bytes = uint64_t{1} << 40;
  props->bandwidth_gbps = 10.0;
  props->latency_us = 2.0;
  props->handle_bytes = sizeof(Handle);
}

uint32_t Transport::next_id() {
  for (;;) {
    last_id_ = last_id_ >= kMaxId ? 1 : last_id_ + 1;
    bool used = connections_.count(last_id_) != 0;
    for (Listener* l : listeners_) used = used || l->id == last_id_;
    if (!used) return last_id_;
  }
}

void Transport::publish_address() {
  if (host_->bootstrap_put == nullptr) {
    fail(HVD_ERR_UNSUPPORTED, "ucx: the host has no bootstrap store");
  }
  hvd_status s = host_->bootstrap_put(host_->ctx, address_key_.c_str(),
                                      address_.data(), address_.size());
  if (s != HVD_OK) {
    fail(s, "ucx: publishing the worker address under '" + address_key_ +
                "' failed");
  }
}

hvd_status Transport::listen(void* handle, Listener** out) {
  if (hvd_status a = aborted(); a != HVD_OK) {
    return refuse(a, "ucx: listen after abort");
  }
  if (listeners_.empty()) publish_address();
  auto* l = new Listener{this, next_id()};
  listeners_.insert(l);
  Handle h{};
  h.magic = kHandleMagic;
  h.rank = hvd_transport_common::world_rank(host_);
  h.listener_id = l->id;
  std::snprintf(h.key, sizeof(h.key), "%s", address_key_.c_str());
  std::memcpy(handle, &h, sizeof(h));
  *out = l;
  return HVD_OK;
}

hvd_status Transport::accept(Listener* listener, const hvd_conn_info* info,
                             Connection** out) {
  if (hvd_status a = aborted(); a != HVD_OK) {
    return refuse(a, "ucx: accept after abort");
  }
  if (info == nullptr)
    fail(HVD_ERR_INVALID_ARGUMENT, "ucx: accept: info is NULL");
  progress();
  ucp_tag_recv_info_t probe{};
  ucp_tag_message_h message =
      ucp_tag_probe_nb(worker_, hello_tag(listener->id), kFullMask, 1, &probe);
  if (message == nullptr) return HVD_AGAIN;
  auto* c = new Connection(*this, next_id(), *info, message, probe.length);
  connections_[c->id()] = c;
  *out = c;
  return HVD_OK;
}

hvd_status Transport::connect(const void* handle, const hvd_conn_info* info,
                              Connection** out) {
  if (hvd_status a = aborted(); a != HVD_OK) {
    return refuse(a, "ucx: connect after abort");
  }
  if (info == nullptr)
    fail(HVD_ERR_INVALID_ARGUMENT, "ucx: connect: info is NULL");
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  if (h.magic != kHandleMagic || h.key[sizeof(h.key) - 1] != '\0') {
    fail(HVD_ERR_INVALID_ARGUMENT, "ucx: connect: not a ucx listen handle");
  }
  std::vector<uint8_t> address(4096);
  for (;;) {
    size_t len = address.size();
    hvd_status s = host_->bootstrap_get(host_->ctx, h.rank, h.key,
                                        address.data(), &len, 60000);
    if (s == HVD_ERR_TRUNCATED && len > address.size()) {
      address.resize(len);
      continue;
    }
    if (s != HVD_OK) {
      fail(s, "ucx: connect: the worker address of rank " +
                  std::to_string(h.rank) + " ('" + h.key +
                  "') is not in the "
                  "bootstrap store");
    }
    address.resize(len);
    break;
  }
  auto* c =
      new Connection(*this, next_id(), *info, address.data(), h.listener_id);
  connections_[c->id()] = c;
  *out = c;
  return HVD_OK;
}

void Transport::close_listener(Listener* listener) {
  listeners_.erase(listener);
  delete listener;
}

void Transport::close_connection(Connection* conn) {
  connections_.erase(conn->id());
  conn->close();
  delete conn;
  // UCX moves bytes only while the worker is progressed: what the
  // connection still had to say (an Ack refusing it, say) goes out now, as
  // the caller may not come back to this transport for a while.
  auto deadline = std::chrono::steady_clock::now() + kCloseLinger;
  while (!closing_.empty() && std::chrono::steady_clock::now() < deadline) {
    progress();
  }
}

hvd_status Transport::conn_test(Connection* conn) {
  aborted();
  progress();
  return conn->handshake();
}

void Transport::progress() {
  while (ucp_worker_progress(worker_) != 0) {
  }
  handle_failures();
  for (size_t i = 0; i < closing_.size();) {
    if (ucp_request_check_status(closing_[i]) != UCS_INPROGRESS) {
      ucp_request_free(closing_[i]);
      closing_[i] = closing_.back();
      closing_.pop_back();
    } else {
      ++i;
    }
  }
  aborted();
}

hvd_status Transport::test(Request* r, int32_t* done, hvd_completion* out) {
  if (!r->complete) progress();
  if (!r->complete) {
    *done = 0;
    return HVD_OK;
  }
  *done = 1;
  if (out != nullptr) {
    size_t size = out->struct_size != 0 && out->struct_size < sizeof(*out)
                      ? out->struct_size
                      : sizeof(*out);
    hvd_completion c = r->result;
    c.struct_size = size;
    std::memcpy(out, &c, size);
  }
  r->reported = true;
  if (r->ucx_done) {
    live_.erase(r);
    delete r;
  }
  return HVD_OK;
}

hvd_status Transport::wait_arm() {
  if (abort_.pending()) return HVD_AGAIN;
  progress();
  if (completed_since_arm_ != 0) {
    completed_since_arm_ = 0;
    return HVD_AGAIN;
  }
  ucs_status_t st = ucp_worker_arm(worker_);
  if (st == UCS_ERR_BUSY) return HVD_AGAIN;
  if (st != UCS_OK) fail_ucs("ucp_worker_arm", st);
  return HVD_OK;
}

void Transport::abort(hvd_status reason, int32_t peer) {
  if (abort_.trip(reason, peer)) {
    ucp_worker_signal(worker_);  // wakes a thread asleep on the wait fd
  }
}

int32_t Transport::rank() const {
  return hvd_transport_common::world_rank(host_);
}

hvd_status Transport::aborted() {
  return abort_.apply(
      [this](hvd_status reason, int32_t peer) { apply_abort(reason, peer); });
}

void Transport::apply_abort(hvd_status reason, int32_t peer) {
  std::vector<Connection*> conns;
  for (auto& [id, c] : connections_) conns.push_back(c);
  for (Connection* c : conns) c->fail(reason, peer);
  while (ucp_worker_progress(worker_) != 0) {
  }
  ++completed_since_arm_;
}

void Transport::endpoint_failed(uint32_t conn_id, ucs_status_t status) {
  // Called from inside ucp_worker_progress: the endpoint is closed after it
  // returns.
  failed_.push_back({conn_id, status});
}

void Transport::handle_failures() {
  while (!failed_.empty()) {
    auto [id, status] = failed_.back();
    failed_.pop_back();
    auto it = connections_.find(id);
    if (it != connections_.end()) it->second->endpoint_failed(status);
  }
}

EndpointOwner* Transport::endpoint_owner(uint32_t conn_id) {
  owners_.push_back(
      std::make_unique<EndpointOwner>(EndpointOwner{this, conn_id}));
  return owners_.back().get();
}

void Transport::retire(ucs_status_ptr_t close_request) {
  if (close_request != nullptr && !UCS_PTR_IS_ERR(close_request)) {
    closing_.push_back(close_request);
  }
}

Request* Transport::new_request(Connection* conn, bool send, bool user,
                                uint64_t bytes) {
  auto* r = new Request;
  r->transport = this;
  r->conn = conn;
  r->send = send;
  r->user = user;
  r->bytes = bytes;
  live_.insert(r);
  return r;
}

void Transport::ucx_finished(Request* r, ucs_status_t status, uint64_t length) {
  r->ucx = nullptr;
  r->ucx_done = true;
  r->ucx_status = status;
  r->length = length;
  Connection* c = r->conn;
  if (c != nullptr) c->finished(r);
  if (!r->complete) {
    int32_t peer = c != nullptr ? c->peer_rank() : -1;
    if (c != nullptr && c->failure() != HVD_OK) {
      complete(r, c->failure(), c->failure_peer(), 0);
    } else if (status == UCS_OK) {
      complete(r, HVD_OK, -1, r->send ? r->bytes : length);
    } else if (status == UCS_ERR_MESSAGE_TRUNCATED) {
      complete(r, HVD_ERR_TRUNCATED, peer, length);
    } else if (peer_failure(status)) {
      complete(r, HVD_ERR_PEER_FAILED, peer, 0);
    } else {
      // This side's failure (a cancel, or UCX failing here): it names this
      // rank, and the connection goes with it once UCX's callbacks are done
      // (handle_failures), as for an endpoint error.
      if (c != nullptr && status != UCS_ERR_CANCELED) {
        failed_.push_back({c->id(), status});
      }
      complete(r, HVD_ERR_ABORTED, rank(), 0);
    }
  }
  if (r->reported) {
    live_.erase(r);
    delete r;
  }
}

void Transport::complete(Request* r, hvd_status status, int32_t peer,
                         uint64_t bytes) {
  r->complete = true;
  r->result.struct_size = sizeof(r->result);
  r->result.status = status;
  r->result.peer = status == HVD_OK ? -1 : peer;
  r->result.bytes = bytes;
  ++completed_since_arm_;
}

void Transport::forget(Request* r) {
  r->conn = nullptr;
  r->reported = true;
  if (!r->complete) complete(r, HVD_ERR_SHUT_DOWN, -1, 0);
  if (r->ucx_done) {
    live_.erase(r);
    delete r;
  }
}

}  // namespace hvd_ucx
