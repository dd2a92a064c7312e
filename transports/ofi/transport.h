// The ofi transport of one process: one reliable-datagram (FI_EP_RDM)
// endpoint with tagged messages, its completion queue and address vector.
// Connections are a handshake over that endpoint plus a slice of the tag
// space; a silent peer with work pending is probed and, past peer_timeout,
// declared dead.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/intrusive_list.h"
#include "endpoint_plan.h"
#include "horovod/transport.h"
#include "horovod_plugin/abort_latch.h"
#include "horovod_plugin/pool.h"
#include "mr_cache.h"
#include "options.h"
#include "protocol.h"

namespace hvd_ofi {

using Clock = std::chrono::steady_clock;
class Transport;
class Connection;

struct Request {
  fi_context2 context;  // what libfabric hands back; must come first
  enum Kind { kSend, kRecv, kCtrlSend, kCtrlRecv } kind = kSend;
  Transport* transport = nullptr;
  Connection* conn = nullptr;
  Registration* pinned = nullptr;
  uint64_t tag = 0;        // sends: the caller's tag
  bool in_fabric = false;  // libfabric still owns it
  bool complete = false;   // the caller's result is final
  bool released = false;   // the caller has seen it
  hvd_completion result{};
  CtrlMessage ctrl{};  // control requests: the message
  hvd_transport_common::Link pending;
};

using PendingList = hvd_transport_common::List<Request, &Request::pending>;

struct Listener {
  Transport* transport;
  uint32_t id;
  std::deque<CtrlMessage> hellos;  // connects not yet accepted
};

class Connection {
 public:
  enum State { kConnecting, kReady, kFailed, kClosed };
  Transport* transport = nullptr;
  uint32_t id = 0;         // ours: the tag slice our receives use
  uint32_t remote_id = 0;  // the peer's: the slice our sends use
  fi_addr_t addr = FI_ADDR_UNSPEC;
  int32_t peer_rank = -1;
  int32_t expected_rank = -1;
  uint64_t epoch = 0;
  State state = kConnecting;
  hvd_status failure = HVD_OK;
  std::string failure_text;
  Clock::time_point last_heard;
  Clock::time_point last_ping;
  uint32_t sends_in_flight = 0;
  std::unordered_set<uint64_t> tags_in_flight;  // plan.one_send_per_tag
  PendingList pending;  // caller's requests not yet complete
};

class Transport {
 public:
  explicit Transport(const hvd_host* host);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  void properties(hvd_transport_properties* props) const;

  hvd_status listen(void* handle, Listener** out);
  hvd_status accept(Listener* l, const hvd_conn_info* info, Connection** out);
  hvd_status connect(const void* handle, const hvd_conn_info* info,
                     Connection** out);
  hvd_status conn_test(Connection* c);
  void close_connection(Connection* c);
  void close_listener(Listener* l);

  Registration* mr_reg(void* buf, size_t bytes, hvd_device device);
  void mr_dereg(Registration* r) { mr_cache_->deregister(r); }

  hvd_status isend(Connection* c, const void* buf, size_t bytes, uint64_t tag,
                   Registration* mr, Request** out);
  hvd_status irecv(Connection* c, void* buf, size_t bytes, uint64_t tag,
                   Registration* mr, Request** out);
  hvd_status test(Request* r, int32_t* done, hvd_completion* out);

  void progress();
  int wait_fd() const { return cq_waitable_ ? epoll_fd_ : -1; }
  hvd_status wait_arm();
  void abort(hvd_status reason, int32_t peer);  // any thread
  // Test only (fault_hook.h): aborts naming this rank and fails every
  // connection from inside, as a rank whose own links went down.
  void sever();

 private:
  void open_fabric();
  void name_shared_memory();  // the shm provider's region, before fi_enable
  fi_info* query(bool hmem, bool ordered, int* rc) const;
  void open_wait_set();
  void close_all();
  hvd_status aborted();
  void apply_abort(hvd_status reason, int32_t peer);
  hvd_status usable(Connection* c, const char* what);

  Request* new_request(Request::Kind kind, Connection* c);
  void release(Request* r);
  void finish(Request* r, hvd_status status, int32_t peer, uint64_t bytes);
  // Every pending request of `c` ends with `status`, naming the peer, or
  // this rank for HVD_ERR_ABORTED; later ones are refused with it.
  void fail_connection(Connection* c, hvd_status status,
                       const std::string& why);
  // A transfer on `c` failed with libfabric's error `err` (positive).
  void fail_transfer(Connection* c, int err);
  // A post on `c` failed with `rc`: fails the connection and refuses it.
  hvd_status refuse_post(Connection* c, const std::string& what, int rc);
  void on_completion(Request* r, int err, uint64_t bytes);
  void on_control(const CtrlMessage& m);
  void post_control_recv(Request* r);
  void send_control(fi_addr_t to, const CtrlMessage& m);
  void flush_control();
  void check_liveness();
  void set_timer(bool on);
  uint64_t data_tag(uint32_t conn_id, uint64_t tag) const {
    return (static_cast<uint64_t>(conn_id) << user_bits_) | (tag & user_mask_);
  }
  CtrlMessage control(CtrlType type, const Connection* c) const;
  Connection* connection(uint32_t id) const;
  fi_addr_t insert_address(const uint8_t* name, uint32_t bytes);

  const hvd_host* host_;
  Options options_;
  int32_t rank_;
  fi_info* info_list_ = nullptr;  // fi_getinfo's answer, owned
  fi_info* info_ = nullptr;       // the entry chosen from it
  EndpointPlan plan_;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_ep* ep_ = nullptr;
  std::unique_ptr<MrCache> mr_cache_;
  uint8_t name_[kNameMax];
  size_t name_bytes_ = 0;
  uint32_t user_bits_ = 0;
  uint64_t user_mask_ = 0;
  uint64_t ctrl_tag_ = 0;
  uint32_t posted_receives_ = 0;  // data and control, in libfabric's hands

  int epoll_fd_ = -1;
  bool cq_waitable_ = false;  // the queue has a wait fd
  int cq_fd_ = -1;
  int abort_fd_ = -1;
  int timer_fd_ = -1;
  bool timer_on_ = false;

  hvd_plugin::Pool<Request> requests_;
  std::vector<std::unique_ptr<Connection>> connections_;  // owned till the end
  std::vector<Connection*> by_id_;                        // live, by id
  uint32_t next_id_ = 1;
  std::vector<std::unique_ptr<Listener>> listeners_;
  uint32_t next_listener_ = 1;
  std::deque<std::pair<fi_addr_t, CtrlMessage>> ctrl_backlog_;
  size_t pending_total_ = 0;

  hvd_plugin::AbortLatch abort_;
};

}  // namespace hvd_ofi
