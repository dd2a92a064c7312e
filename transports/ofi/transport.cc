#include "transport.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "common/host_access.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/job_files.h"

namespace hvd_ofi {

using hvd_plugin::fail;
using hvd_plugin::fail_errno;
using hvd_plugin::refuse;

namespace {

[[noreturn]] void fail_fi(const std::string& what, int rc) {
  fail(HVD_ERR_SYSTEM, "ofi: " + what + ": " + fi_strerror(rc < 0 ? -rc : rc));
}

void check_fi(const std::string& what, int rc) {
  if (rc != 0) fail_fi(what, rc);
}

void drain(int fd) {
  uint64_t value;
  while (::read(fd, &value, sizeof(value)) > 0) {
  }
}

PlanInput plan_input(const Options& o) {
  PlanInput input;
  input.max_requests = o.max_requests;
  input.max_message_bytes = o.max_message_bytes;
  input.trust_send_order = !o.serialize_sends;
  input.register_always = o.register_always;
  input.reserved_tag_bits = kConnIdBits + 1;
  return input;
}

}  // namespace

// ---- set-up ----------------------------------------------------------------

Transport::Transport(const hvd_host* host)
    : host_(host),
      options_(read_options(host)),
      rank_(hvd_transport_common::world_rank(host)) {
  try {
    open_fabric();
    open_wait_set();
    for (uint32_t i = 0; i < plan_.control_receives; ++i) {
      post_control_recv(new_request(Request::kCtrlRecv, nullptr));
    }
  } catch (...) {
    close_all();
    throw;
  }
}

// fi_getinfo for the configured provider; with `hmem`, device memory too,
// with `ordered`, send-after-send ordering (a provider without the one or
// the other then answers nothing).
// The shm provider's region is a file in /dev/shm named after the process
// ("<pid>:<uid>:<n>"), which a rank that dies before closing leaves behind.
// Named under the job's prefix, horovodrun removes it after the job.
void Transport::name_shared_memory() {
  if (std::strcmp(info_->fabric_attr->prov_name, "shm") != 0) return;
  static std::atomic<unsigned> endpoints{0};
  std::string name = hvd_plugin::job_file_prefix().substr(1) + "-ofi" +
                     std::to_string(endpoints.fetch_add(1));
  check_fi("fi_setname", fi_setname(&ep_->fid, name.data(), name.size() + 1));
}

fi_info* Transport::query(bool hmem, bool ordered, int* rc) const {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) fail(HVD_ERR_OUT_OF_MEMORY, "ofi: fi_allocinfo");
  hints->caps = FI_TAGGED | (hmem ? FI_HMEM : 0);
  hints->mode = kHintModes;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
                                FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                FI_MR_ENDPOINT | (hmem ? FI_MR_HMEM : 0);
  hints->domain_attr->av_type = FI_AV_TABLE;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  if (ordered) {
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
  }
  hints->fabric_attr->prov_name = strdup(options_.provider.c_str());
  fi_info* info = nullptr;
  *rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  return *rc == 0 ? info : nullptr;
}

void Transport::open_fabric() {
  // rxm over tcp receives large messages straight into the posted buffer
  // ("dynamic receive buffers"); a truncated one then breaks the connection
  // instead of failing the receive alone. A value set by the user stands.
  setenv("FI_OFI_RXM_ENABLE_DYN_RBUF", "0", 0);
  // Preferred first: same-tag messages matched in the order sent (without,
  // the plan serialises same-tag sends), then device memory where this host
  // has CUDA devices.
  PlanInput input = plan_input(options_);
  const hvd_device_api* device = host_->device;
  if (device != nullptr && device->device_count != nullptr &&
      device->device_count(device->ctx, HVD_MEM_CUDA) > 0) {
    input.device_kinds |= HVD_MEM_BIT(HVD_MEM_CUDA);
  }
  bool gpus = input.device_kinds != 0;
  int rc = 0;
  for (bool ordered : {true, false}) {
    for (bool hmem : {true, false}) {
      if (info_list_ == nullptr && (gpus || !hmem)) {
        info_list_ = query(hmem, ordered, &rc);
      }
    }
  }
  if (info_list_ == nullptr) {
    fail(HVD_ERR_UNSUPPORTED,
         "ofi: no provider '" + options_.provider +
             "' with reliable tagged datagrams here (fi_getinfo: " +
             fi_strerror(-rc) + "); set [transport.ofi] provider");
  }
  std::string why;
  info_ =
      const_cast<fi_info*>(choose_endpoint(info_list_, input, &plan_, &why));
  if (info_ == nullptr) {
    fail(HVD_ERR_UNSUPPORTED, "ofi: provider '" + options_.provider +
                                  "' cannot serve this transport: " + why);
  }
  check_fi("fi_fabric", fi_fabric(info_->fabric_attr, &fabric_, nullptr));
  check_fi("fi_domain", fi_domain(fabric_, info_, &domain_, nullptr));
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  check_fi("fi_av_open", fi_av_open(domain_, &av_attr, &av_, nullptr));
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_TAGGED;
  cq_attr.wait_obj = FI_WAIT_FD;
  rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr);
  cq_waitable_ = rc == 0;
  if (rc != 0) {
    // No fd to sleep on (shm in 1.17, efa): the transport offers no wait fd.
    cq_attr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr);
  }
  check_fi("fi_cq_open", rc);
  check_fi("fi_endpoint", fi_endpoint(domain_, info_, &ep_, nullptr));
  check_fi("fi_ep_bind(av)", fi_ep_bind(ep_, &av_->fid, 0));
  check_fi("fi_ep_bind(cq)", fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV));
  name_shared_memory();
  check_fi("fi_enable", fi_enable(ep_));
  size_t len = sizeof(name_);
  check_fi("fi_getname", fi_getname(&ep_->fid, name_, &len));
  name_bytes_ = len;
  mr_cache_ =
      std::make_unique<MrCache>(domain_, ep_, plan_, options_.mr_cache_entries);

  user_bits_ = plan_.user_tag_bits;
  user_mask_ = user_bits_ >= 64 ? ~0ull : (1ull << user_bits_) - 1;
  ctrl_tag_ = 1ull << (plan_.tag_bits - 1);
  hvd_transport_common::log(host_, HVD_LOG_INFO, describe(*info_, plan_));
}

void Transport::open_wait_set() {
  if (cq_waitable_) {
    check_fi("fi_control(FI_GETWAIT)",
             fi_control(&cq_->fid, FI_GETWAIT, &cq_fd_));
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) fail_errno("ofi: epoll_create1");
  abort_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (abort_fd_ < 0) fail_errno("ofi: eventfd");
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) fail_errno("ofi: timerfd_create");
  for (int fd : {cq_fd_, abort_fd_, timer_fd_}) {
    if (fd < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      fail_errno("ofi: epoll_ctl");
    }
  }
}

Transport::~Transport() { close_all(); }

void Transport::close_all() {
  // The endpoint goes first: nothing of ours is in libfabric's hands after.
  if (ep_ != nullptr) fi_close(&ep_->fid);
  ep_ = nullptr;
  mr_cache_.reset();
  if (cq_ != nullptr) fi_close(&cq_->fid);
  cq_ = nullptr;
  if (av_ != nullptr) fi_close(&av_->fid);
  av_ = nullptr;
  if (domain_ != nullptr) fi_close(&domain_->fid);
  domain_ = nullptr;
  if (fabric_ != nullptr) fi_close(&fabric_->fid);
  fabric_ = nullptr;
  if (info_list_ != nullptr) fi_freeinfo(info_list_);
  info_list_ = info_ = nullptr;
  for (int* fd : {&epoll_fd_, &abort_fd_, &timer_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void Transport::properties(hvd_transport_properties* props) const {
  hvd_transport_properties p{};
  p.struct_size = HVD_STRUCT_SIZE(hvd_transport_properties, handle_bytes);
  p.mem_kinds = plan_.mem_kinds;
  // Device memory and FI_MR_LOCAL want registered buffers from the core.
  bool needs_mr =
      plan_.register_local || plan_.mem_kinds != HVD_MEM_BIT(HVD_MEM_HOST);
  // Providers may run progress threads of their own (tcp, shm, rxm).
  p.flags =
      HVD_TRANSPORT_GLOBAL_MR | HVD_TRANSPORT_OWN_THREADS |
      (needs_mr ? uint32_t{HVD_TRANSPORT_NEEDS_MR} : 0u) |
      (plan_.manual_progress ? uint32_t{HVD_TRANSPORT_NEEDS_PROGRESS} : 0u);
  p.tag_bits = user_bits_;
  p.max_requests = plan_.max_requests;
  p.max_message_bytes = plan_.max_message_bytes;
  std::string prov = info_->fabric_attr->prov_name;
  bool rdma = prov.find("efa") != std::string::npos ||
              prov.find("verbs") != std::string::npos;
  p.bandwidth_gbps = rdma ? 100.0 : prov == "shm" ? 80.0 : 10.0;
  p.latency_us = rdma ? 5.0 : prov == "shm" ? 1.0 : 30.0;
  p.handle_bytes = sizeof(Handle);
  size_t room = props->struct_size != 0 ? props->struct_size : sizeof(p);
  std::memcpy(props, &p, std::min(room, sizeof(p)));
  props->struct_size = std::min(room, sizeof(p));
}

Registration* Transport::mr_reg(void* buf, size_t bytes, hvd_device device) {
  if (device.kind < 0 || device.kind >= HVD_MEM_KIND_COUNT ||
      (plan_.mem_kinds & HVD_MEM_BIT(device.kind)) == 0) {
    fail(HVD_ERR_UNSUPPORTED,
         std::string("ofi: provider ") + info_->fabric_attr->prov_name +
             " cannot send from " +
             (device.kind == HVD_MEM_CUDA ? "cuda" : "device") +
             " memory (no FI_HMEM); only host memory");
  }
  return mr_cache_->register_region(buf, bytes, device);
}

// ---- requests --------------------------------------------------------------

Request* Transport::new_request(Request::Kind kind, Connection* c) {
  Request* r = requests_.take();
  r->kind = kind;
  r->transport = this;
  r->conn = c;
  r->result.struct_size = sizeof(hvd_completion);
  r->result.peer = -1;
  return r;
}

void Transport::release(Request* r) {
  mr_cache_->unpin(r->pinned);
  requests_.put(r);
}

// The caller's result is final; the request may still be libfabric's.
void Transport::finish(Request* r, hvd_status status, int32_t peer,
                       uint64_t bytes) {
  if (r->complete) return;
  r->complete = true;
  r->result.status = status;
  r->result.peer = status == HVD_OK ? -1 : peer;
  r->result.bytes = bytes;
  if (r->conn != nullptr && PendingList::linked(r)) {
    r->conn->pending.remove(r);
    --pending_total_;
  }
}

hvd_status Transport::test(Request* r, int32_t* done, hvd_completion* out) {
  if (!r->complete) progress();
  if (!r->complete) {
    *done = 0;
    return HVD_OK;
  }
  *done = 1;
  if (out != nullptr) {
    size_t room = out->struct_size != 0 ? out->struct_size : sizeof(*out);
    hvd_completion result = r->result;
    result.struct_size = std::min(room, sizeof(result));
    std::memcpy(out, &result, result.struct_size);
  }
  r->released = true;
  if (!r->in_fabric) release(r);
  return HVD_OK;
}

// ---- connections -----------------------------------------------------------

Connection* Transport::connection(uint32_t id) const {
  return id < by_id_.size() ? by_id_[id] : nullptr;
}

fi_addr_t Transport::insert_address(const uint8_t* name, uint32_t bytes) {
  if (bytes == 0 || bytes > kNameMax) {
    fail(HVD_ERR_INVALID_ARGUMENT,
         "ofi: a peer address of " + std::to_string(bytes) + " bytes");
  }
  fi_addr_t addr = FI_ADDR_UNSPEC;
  int n = fi_av_insert(av_, name, 1, &addr, 0, nullptr);
  if (n != 1) fail_fi("fi_av_insert", n < 0 ? n : -FI_EINVAL);
  return addr;
}

CtrlMessage Transport::control(CtrlType type, const Connection* c) const {
  CtrlMessage m{};
  m.magic = kMagic;
  m.type = type;
  m.rank = rank_;
  if (c != nullptr) {
    m.from_id = c->id;
    m.to_id = c->remote_id;
    m.epoch = c->epoch;
  }
  return m;
}

hvd_status Transport::listen(void* handle, Listener** out) {
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "ofi: the transport was aborted");
  }
  auto l = std::make_unique<Listener>();
  l->transport = this;
  l->id = next_listener_++;
  Handle h{};
  h.magic = kMagic;
  h.listener = l->id;
  h.name_bytes = static_cast<uint32_t>(name_bytes_);
  std::memcpy(h.name, name_, name_bytes_);
  std::memcpy(handle, &h, sizeof(h));
  *out = l.get();
  listeners_.push_back(std::move(l));
  return HVD_OK;
}

void Transport::close_listener(Listener* l) {
  for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
    if (it->get() == l) {
      listeners_.erase(it);
      return;
    }
  }
}

hvd_status Transport::connect(const void* handle, const hvd_conn_info* info,
                              Connection** out) {
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "ofi: the transport was aborted");
  }
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  if (h.magic != kMagic || h.name_bytes > kNameMax) {
    fail(HVD_ERR_INVALID_ARGUMENT, "ofi: connect: not an ofi listen handle");
  }
  // Ids are never reused within an instance, so a late message can't reach
  // a newer connection.
  if (next_id_ > kMaxConnId) {
    fail(HVD_ERR_OUT_OF_MEMORY, "ofi: out of connection ids");
  }
  auto c = std::make_unique<Connection>();
  c->transport = this;
  c->id = next_id_++;
  c->addr = insert_address(h.name, h.name_bytes);
  c->expected_rank = info != nullptr ? info->peer_rank : -1;
  c->epoch = info != nullptr ? info->epoch : 0;
  c->last_heard = c->last_ping = Clock::now();
  CtrlMessage m = control(kHello, c.get());
  m.listener = h.listener;
  m.to_id = 0;
  m.name_bytes = static_cast<uint32_t>(name_bytes_);
  std::memcpy(m.name, name_, name_bytes_);
  by_id_.resize(std::max<size_t>(by_id_.size(), c->id + 1), nullptr);
  by_id_[c->id] = c.get();
  *out = c.get();
  connections_.push_back(std::move(c));
  send_control((*out)->addr, m);
  return HVD_OK;
}

hvd_status Transport::accept(Listener* l, const hvd_conn_info* info,
                             Connection** out) {
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "ofi: the transport was aborted");
  }
  if (l->hellos.empty()) progress();
  if (l->hellos.empty()) return HVD_AGAIN;
  if (next_id_ > kMaxConnId) {
    fail(HVD_ERR_OUT_OF_MEMORY, "ofi: out of connection ids");
  }
  CtrlMessage hello = l->hellos.front();
  l->hellos.pop_front();
  auto c = std::make_unique<Connection>();
  c->transport = this;
  c->id = next_id_++;
  c->remote_id = hello.from_id;
  c->addr = insert_address(hello.name, hello.name_bytes);
  c->peer_rank = hello.rank;
  c->expected_rank = info != nullptr ? info->peer_rank : -1;
  c->epoch = info != nullptr ? info->epoch : 0;
  c->last_heard = c->last_ping = Clock::now();
  CtrlMessage welcome = control(kWelcome, c.get());
  welcome.status = HVD_OK;
  if (hello.epoch != c->epoch) {
    welcome.status = HVD_ERR_EPOCH_MISMATCH;
    c->state = Connection::kFailed;
    c->failure = HVD_ERR_EPOCH_MISMATCH;
    c->failure_text = "ofi: rank " + std::to_string(hello.rank) +
                      " connected with epoch " + std::to_string(hello.epoch) +
                      ", this rank is at epoch " + std::to_string(c->epoch);
  } else if (c->expected_rank >= 0 && c->expected_rank != hello.rank) {
    welcome.status = HVD_ERR_MISMATCH;
    c->state = Connection::kFailed;
    c->failure = HVD_ERR_MISMATCH;
    c->failure_text = "ofi: expected rank " + std::to_string(c->expected_rank) +
                      " to connect, rank " + std::to_string(hello.rank) +
                      " did";
  } else {
    c->state = Connection::kReady;
  }
  by_id_.resize(std::max<size_t>(by_id_.size(), c->id + 1), nullptr);
  by_id_[c->id] = c.get();
  *out = c.get();
  connections_.push_back(std::move(c));
  send_control((*out)->addr, welcome);
  return HVD_OK;
}

hvd_status Transport::conn_test(Connection* c) {
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "ofi: the transport was aborted");
  }
  if (c->state == Connection::kConnecting) progress();
  switch (c->state) {
    case Connection::kConnecting:
      return HVD_AGAIN;
    case Connection::kReady:
      return HVD_OK;
    default:
      return refuse(c->failure, c->failure_text);
  }
}

void Transport::close_connection(Connection* c) {
  if (c->state != Connection::kClosed) {
    fail_connection(c, HVD_ERR_ABORTED, "");
  }
  c->state = Connection::kClosed;
  if (c->id < by_id_.size()) by_id_[c->id] = nullptr;
}

// ---- control messages ------------------------------------------------------

void Transport::post_control_recv(Request* r) {
  void* desc =
      mr_cache_->descriptor(nullptr, &r->ctrl, sizeof(r->ctrl), &r->pinned);
  ssize_t rc;
  do {
    rc = fi_trecv(ep_, &r->ctrl, sizeof(r->ctrl), desc, FI_ADDR_UNSPEC,
                  ctrl_tag_, 0, r);
    if (rc == -FI_EAGAIN) fi_cq_read(cq_, nullptr, 0);
  } while (rc == -FI_EAGAIN);
  if (rc != 0) fail_fi("fi_trecv (control)", static_cast<int>(rc));
  r->in_fabric = true;
  ++posted_receives_;
}

void Transport::send_control(fi_addr_t to, const CtrlMessage& m) {
  ctrl_backlog_.emplace_back(to, m);
  flush_control();
}

void Transport::flush_control() {
  while (!ctrl_backlog_.empty()) {
    Request* r = new_request(Request::kCtrlSend, nullptr);
    r->ctrl = ctrl_backlog_.front().second;
    void* desc =
        mr_cache_->descriptor(nullptr, &r->ctrl, sizeof(r->ctrl), &r->pinned);
    ssize_t rc = fi_tsend(ep_, &r->ctrl, sizeof(r->ctrl), desc,
                          ctrl_backlog_.front().first, ctrl_tag_, r);
    if (rc == -FI_EAGAIN) {
      release(r);
      return;
    }
    if (rc != 0) {
      release(r);
      fail_fi("fi_tsend (control)", static_cast<int>(rc));
    }
    r->in_fabric = true;
    ctrl_backlog_.pop_front();
  }
}

void Transport::on_control(const CtrlMessage& m) {
  if (m.magic != kMagic) return;
  if (m.type == kHello) {
    for (auto& l : listeners_) {
      if (l->id == m.listener) l->hellos.push_back(m);
    }
    return;
  }
  Connection* c = connection(m.to_id);
  if (c == nullptr) return;
  c->last_heard = Clock::now();
  switch (m.type) {
    case kWelcome:
      if (c->state != Connection::kConnecting) return;
      c->remote_id = m.from_id;
      c->peer_rank = m.rank;
      if (m.status == HVD_ERR_EPOCH_MISMATCH || m.epoch != c->epoch) {
        c->state = Connection::kFailed;
        c->failure = HVD_ERR_EPOCH_MISMATCH;
        c->failure_text = "ofi: rank " + std::to_string(m.rank) +
                          " is at epoch " + std::to_string(m.epoch) +
                          ", this connection at " + std::to_string(c->epoch);
      } else if (m.status != HVD_OK ||
                 (c->expected_rank >= 0 && c->expected_rank != m.rank)) {
        c->state = Connection::kFailed;
        c->failure = HVD_ERR_MISMATCH;
        c->failure_text = "ofi: expected rank " +
                          std::to_string(c->expected_rank) + ", reached rank " +
                          std::to_string(m.rank);
      } else {
        c->state = Connection::kReady;
      }
      return;
    case kPing:
      if (c->state == Connection::kReady) {
        send_control(c->addr, control(kPong, c));
      }
      return;
    default:
      return;
  }
}

void Transport::set_timer(bool on) {
  if (on == timer_on_) return;
  timer_on_ = on;
  itimerspec spec{};
  if (on) {
    long ms = static_cast<long>(options_.ping_interval_ms);
    spec.it_interval.tv_sec = ms / 1000;
    spec.it_interval.tv_nsec = (ms % 1000) * 1000000;
    spec.it_value = spec.it_interval;
  }
  timerfd_settime(timer_fd_, 0, &spec, nullptr);
}

// ---- data ------------------------------------------------------------------

hvd_status Transport::usable(Connection* c, const char* what) {
  if (hvd_status reason = aborted(); reason != HVD_OK) {
    return refuse(reason, "ofi: the transport was aborted");
  }
  if (c->state == Connection::kReady) return HVD_OK;
  if (c->state == Connection::kConnecting) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  std::string("ofi: ") + what +
                      " on a connection whose handshake is not done");
  }
  return refuse(c->failure == HVD_OK ? HVD_ERR_INVALID_ARGUMENT : c->failure,
                c->failure_text.empty() ? "ofi: the connection is closed"
                                        : c->failure_text);
}

hvd_status Transport::isend(Connection* c, const void* buf, size_t bytes,
                            uint64_t tag, Registration* mr, Request** out) {
  if (hvd_status s = usable(c, "isend"); s != HVD_OK) return s;
  if (bytes > plan_.max_message_bytes) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "ofi: a send of " + std::to_string(bytes) +
                      " bytes to rank " + std::to_string(c->peer_rank) +
                      " is over " + info_->fabric_attr->prov_name +
                      "'s max_msg_size of " +
                      std::to_string(plan_.max_message_bytes) +
                      " (max_message_bytes: split it)");
  }
  auto blocked = [&] {
    return c->sends_in_flight >= plan_.max_requests ||
           (plan_.one_send_per_tag && c->tags_in_flight.count(tag) != 0);
  };
  if (blocked()) {
    progress();
    if (blocked()) return HVD_AGAIN;
  }
  Request* r = new_request(Request::kSend, c);
  if (plan_.inject_bytes > 0 && bytes <= plan_.inject_bytes) {
    // Copied out at once, no completion to wait for.
    ssize_t rc =
        fi_tinject(ep_, buf, bytes, c->addr, data_tag(c->remote_id, tag));
    if (rc == 0) {
      finish(r, HVD_OK, c->peer_rank, bytes);
      *out = r;
      return HVD_OK;
    }
    if (rc != -FI_EAGAIN) {
      release(r);
      return refuse_post(c,
                         "fi_tinject to rank " + std::to_string(c->peer_rank),
                         static_cast<int>(rc));
    }
    // Inject space is exhausted: a regular send may still go.
  }
  void* desc = mr_cache_->descriptor(mr, buf, bytes, &r->pinned);
  ssize_t rc;
  if (plan_.send_flags != 0) {
    iovec iov{const_cast<void*>(buf), bytes};
    fi_msg_tagged msg{};
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = c->addr;
    msg.tag = data_tag(c->remote_id, tag);
    msg.context = r;
    rc = fi_tsendmsg(ep_, &msg, plan_.send_flags);
  } else {
    rc = fi_tsend(ep_, buf, bytes, desc, c->addr, data_tag(c->remote_id, tag),
                  r);
  }
  if (rc != 0) {
    release(r);
    if (rc == -FI_EAGAIN) {
      progress();
      return HVD_AGAIN;
    }
    return refuse_post(c, "fi_tsend to rank " + std::to_string(c->peer_rank),
                       static_cast<int>(rc));
  }
  r->in_fabric = true;
  r->tag = tag;
  r->result.bytes = bytes;
  ++c->sends_in_flight;
  if (plan_.one_send_per_tag) c->tags_in_flight.insert(tag);
  // Silence counts only while work is pending on the connection.
  if (c->pending.empty()) c->last_heard = Clock::now();
  c->pending.push_back(r);
  ++pending_total_;
  set_timer(true);
  *out = r;
  return HVD_OK;
}

hvd_status Transport::irecv(Connection* c, void* buf, size_t bytes,
                            uint64_t tag, Registration* mr, Request** out) {
  if (hvd_status s = usable(c, "irecv"); s != HVD_OK) return s;
  // Past the provider's receive queue some providers fail with FI_ENOMEM
  // rather than push back (shm in 1.17): push back here instead.
  if (posted_receives_ >= plan_.max_posted_receives) {
    progress();
    if (posted_receives_ >= plan_.max_posted_receives) return HVD_AGAIN;
  }
  Request* r = new_request(Request::kRecv, c);
  void* desc = mr_cache_->descriptor(mr, buf, bytes, &r->pinned);
  ssize_t rc = fi_trecv(ep_, buf, bytes, desc, FI_ADDR_UNSPEC,
                        data_tag(c->id, tag), 0, r);
  if (rc != 0) {
    release(r);
    if (rc == -FI_EAGAIN) {
      progress();
      return HVD_AGAIN;
    }
    return refuse_post(c, "fi_trecv from rank " + std::to_string(c->peer_rank),
                       static_cast<int>(rc));
  }
  r->in_fabric = true;
  ++posted_receives_;
  // Silence counts only while work is pending on the connection.
  if (c->pending.empty()) c->last_heard = Clock::now();
  c->pending.push_back(r);
  ++pending_total_;
  set_timer(true);
  *out = r;
  return HVD_OK;
}

void Transport::on_completion(Request* r, int err, uint64_t bytes) {
  r->in_fabric = false;
  if (r->kind == Request::kRecv || r->kind == Request::kCtrlRecv) {
    --posted_receives_;
  }
  switch (r->kind) {
    case Request::kCtrlRecv:
      if (err == 0) on_control(r->ctrl);
      if (err != FI_ECANCELED && ep_ != nullptr) {
        mr_cache_->unpin(r->pinned);
        r->pinned = nullptr;
        post_control_recv(r);
      } else {
        release(r);
      }
      return;
    case Request::kCtrlSend:
      release(r);
      return;
    case Request::kSend:
    case Request::kRecv: {
      Connection* c = r->conn;
      if (r->kind == Request::kSend) {
        if (c->sends_in_flight > 0) --c->sends_in_flight;
        if (plan_.one_send_per_tag) c->tags_in_flight.erase(r->tag);
      }
      if (err == 0) {
        // Either way the peer's side took part: a receive came from it, a
        // send was taken by it (a large one only once it has read it all).
        c->last_heard = Clock::now();
        // A send's completion carries no length: it sent all it was given.
        finish(r, HVD_OK, c->peer_rank,
               r->kind == Request::kSend ? r->result.bytes : bytes);
      } else if (err == FI_ETRUNC) {
        c->last_heard = Clock::now();
        finish(r, HVD_ERR_TRUNCATED, c->peer_rank, bytes);
      } else if (err != FI_ECANCELED) {
        fail_transfer(c, err);
      }
      // Not finished by now: cancelled on this side.
      finish(r, HVD_ERR_ABORTED, rank_, 0);
      if (r->released) release(r);
      return;
    }
  }
}

void Transport::progress() {
  aborted();
  fi_cq_tagged_entry entries[16];
  for (;;) {
    ssize_t n = fi_cq_read(cq_, entries, 16);
    if (n > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        on_completion(static_cast<Request*>(entries[i].op_context), 0,
                      entries[i].len);
      }
      continue;
    }
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(cq_, &err, 0) <= 0) break;
      if (err.op_context != nullptr) {
        on_completion(static_cast<Request*>(err.op_context), err.err, err.len);
      }
      continue;
    }
    break;
  }
  flush_control();
  check_liveness();
  if (pending_total_ == 0) set_timer(false);
}

hvd_status Transport::wait_arm() {
  drain(timer_fd_);
  if (abort_.pending()) return HVD_AGAIN;
  if (!ctrl_backlog_.empty() || !cq_waitable_) return HVD_AGAIN;
  fid* fids[1] = {&cq_->fid};
  int rc = fi_trywait(fabric_, fids, 1);
  if (rc == 0) return HVD_OK;
  if (rc == -FI_EAGAIN) return HVD_AGAIN;
  fail_fi("fi_trywait", rc);
}

// ---- abort -----------------------------------------------------------------

void Transport::abort(hvd_status reason, int32_t peer) {
  abort_.trip(reason, peer);
  uint64_t one = 1;
  ssize_t n = ::write(abort_fd_, &one, sizeof(one));
  (void)n;
}

hvd_status Transport::aborted() {
  return abort_.apply(
      [this](hvd_status reason, int32_t peer) { apply_abort(reason, peer); });
}

void Transport::apply_abort(hvd_status reason, int32_t peer) {
  drain(abort_fd_);
  for (Connection* c : by_id_) {
    if (c == nullptr) continue;
    while (Request* r = c->pending.front()) {
      if (r->kind == Request::kRecv && r->in_fabric) fi_cancel(&ep_->fid, r);
      finish(r, reason, peer, 0);
    }
  }
}

}  // namespace hvd_ofi
