// One shm connection: the handshake over a UNIX socket, then messages
// through the pair of rings in the shared segment.
//
// Messages are frames in the ring, matched to receives by tag in order of
// arrival (for one tag, messages and receives pair up in the order they were
// sent and posted). A message whose receive is not posted yet is taken into
// a buffer, so the ring never stalls behind it. Large messages stream
// through the ring in chunks, the receiver copying out while the sender
// copies in; a send from a memory segment of mem_alloc() instead sends only
// where the payload is, and the receiver copies it straight across.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "protocol.h"
#include "request.h"
#include "ring.h"
#include "segment.h"
#include "transport.h"

namespace hvd_shm {

class Connection {
 public:
  // side 0 connects, side 1 accepts.
  Connection(Transport& transport, const hvd_conn_info& info, int side);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start_connect(const Handle& handle);
  void start_accept(int socket_fd);
  // conn_test(): HVD_AGAIN until the handshake is done.
  hvd_status handshake();
  int32_t peer_rank() const { return peer_rank_; }
  Transport& transport() { return t_; }
  bool usable() const { return state_ == State::kEstablished; }

  hvd_status isend(const void* buf, size_t bytes, uint64_t tag,
                   const MemoryRegion* mr, Request** out);
  hvd_status irecv(void* buf, size_t bytes, uint64_t tag, Request** out);
  hvd_status iput(const void* src, RemoteRegion* dst, uint64_t offset,
                  size_t bytes, Request** out);
  hvd_status iget(void* dst, RemoteRegion* src, uint64_t offset, size_t bytes,
                  Request** out);
  hvd_status import(const void* key, size_t key_bytes, RemoteRegion** out);

  // One pass: take what arrived, copy, send what waits. Whether anything
  // moved.
  bool progress();
  // With this side's sleeping flag set: whether progress() has work now.
  bool work_ready();
  void set_sleeping(bool sleeping);

  // The socket has an event after the handshake: the peer is gone.
  void on_socket_event();
  // Every pending request completes with `status` and `peer`; later calls
  // fail the same way.
  void fail(hvd_status status, int32_t peer, const std::string& why);
#ifdef HOROVOD_FAULT_HOOKS
  // Test only: shuts its sockets down and unmaps its rings (private memory takes
  // their place, so this side carries on alone).
  void sever();
#endif
  // Pending requests complete with HVD_ERR_SHUT_DOWN (conn_close).
  void shut_down();

  EventSource* source() { return &source_; }

 private:
  enum class State {
    kConnectPending,  // the listener's backlog was full
    kSendHello,
    kAwaitReply,
    kAwaitHello,
    kSendReply,
    kEstablished,
    kFailed
  };

  hvd_status refusal() const;  // the failure, as a status + last_error
  void attach_rings();
  void send_hello();
  void receive_reply();
  void receive_hello();
  void send_reply();
  Hello make_hello(uint16_t kind, hvd_status status) const;

  bool rx_progress();
  bool tx_progress();
  bool copy_progress();
  void on_frame(const FrameHeader& frame);
  void begin_data(const FrameHeader& frame);
  void finish_payload();
  void begin_rendezvous(Request* recv, uint64_t length, uint64_t segment,
                        uint64_t offset, uint64_t cookie);
  void deliver(Unexpected* u, Request* recv);
  void send_ack(uint64_t cookie, hvd_status status);
  void complete(Request* req, hvd_status status, uint64_t bytes);
  void notify_peer();
  void protocol_error(const std::string& what);
  void drop_unexpected();

  Transport& t_;
  hvd_conn_info info_;
  const int side_;
  State state_;
  int32_t peer_rank_;
  hvd_status status_ = HVD_OK;  // once failed
  int32_t fail_peer_ = -1;
  std::string error_;

  std::string socket_name_;
  int socket_ = -1;
  bool watched_ = false;
  int peer_wake_fd_ = -1;
  std::unique_ptr<Segment> segment_;
  SegmentHeader* header_ = nullptr;
  std::string peer_prefix_;
  uint32_t peer_pid_ = 0;
  EventSource source_{EventSource::kConnection, this};

  RingWriter writer_;
  RingReader reader_;
  uint64_t chunk_ = 0;

  ActiveRequests active_;
  RequestQueue send_queue_;
  RequestQueue posted_;
  RequestQueue awaiting_ack_;
  RequestQueue copies_;
  UnexpectedQueue unexpected_;
  uint32_t sends_pending_ = 0;
  uint32_t recvs_pending_ = 0;
  uint64_t next_cookie_ = 1;
  std::vector<FrameHeader> control_;  // acks waiting for the ring
  size_t control_sent_ = 0;

  // The frame whose payload is arriving.
  bool rx_active_ = false;
  uint8_t* rx_target_ = nullptr;  // null: discard
  uint64_t rx_remaining_ = 0;
  uint64_t rx_offset_ = 0;
  bool rx_streaming_ = false;
  Request* rx_recv_ = nullptr;
  Unexpected* rx_unexpected_ = nullptr;

  // Peers' segments this connection's rendezvous receives read from.
  std::map<uint64_t, std::shared_ptr<Segment>> rendezvous_maps_;
};

}  // namespace hvd_shm
