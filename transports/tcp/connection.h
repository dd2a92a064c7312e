// One tcp connection to a peer: `streams` sockets, the handshake on each,
// then messages (see protocol.h), matched to receives by tag in order of
// arrival. A message whose receive is not posted yet is read into a buffer
// of its own, so a stream never stalls behind it.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "addresses.h"
#include "protocol.h"
#include "request.h"
#include "transport.h"

namespace hvd_tcp {

class Listener;

class Connection {
 public:
  // The connecting end, to a listener at `targets` (tried in order).
  Connection(Transport& transport, const hvd_conn_info& info,
             std::vector<Address> targets);
  // The accepting end, from the first Hello that named it.
  Connection(Transport& transport, Listener* listener, const Hello& first);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Transport& transport() { return t_; }
  uint64_t key() const { return key_; }

  // Accepting end: a stream arrived. false when it does not belong here.
  bool attach(int fd, const Hello& hello);
  bool gathered() const { return attached_ == streams_.size(); }
  void accepted(const hvd_conn_info& info);
  void listener_gone();

  hvd_status handshake();  // conn_test
  int32_t peer_rank() const { return peer_rank_; }
  bool usable() const { return state_ == State::kEstablished; }

  hvd_status isend(const void* buf, size_t bytes, uint64_t tag, Request** out);
  hvd_status irecv(void* buf, size_t bytes, uint64_t tag, Request** out);

  // epoll reported `events` on stream `index`.
  void on_event(uint32_t index, uint32_t events);
  void fail(hvd_status status, int32_t peer, const std::string& why);
#ifdef HOROVOD_FAULT_HOOKS
  // Test only: shuts its sockets down.
  void sever();
#endif
  void shut_down();

 private:
  enum class State { kSettingUp, kEstablished, kFailed };

  struct Part {
    InMessage* message;
    uint32_t seq;
    uint32_t index;
    uint64_t offset;
    uint64_t bytes;
  };

  struct Stream {
    uint32_t index = 0;
    int fd = -1;
    bool watched = false;
    uint32_t interest = 0;
    EventSource source{EventSource::kStream, nullptr};
    enum Phase { kNone, kConnecting, kSendHello, kAwaitAck, kSendAck, kReady };
    Phase phase = kNone;
    size_t target = 0;  // connecting end: the address being tried
    Hello hello{};
    Ack ack{};
    size_t shaken = 0;  // bytes of the hello or ack moved
    TxQueue tx;
    // Streams > 0: the parts announced on stream 0 for this stream.
    std::deque<Part> expected;
    bool in_part = false;
    Part current{};
    uint64_t part_done = 0;
    PartHeader part_header{};
    size_t part_header_got = 0;
    bool ended = false;  // the peer closed this socket
  };

  hvd_status refusal() const;
  void connect_stream(Stream& s);
  void step_connecting(Stream& s);
  void step_accepting(Stream& s);
  void establish();
  // Options::congestion_control on every stream.
  void choose_congestion_control();
  void set_interest(Stream& s);
  void unwatch(Stream& s);

  bool rx_stream0();
  bool rx_parts(Stream& s);
  bool tx(Stream& s);
  void on_header(const FrameHeader& frame);
  void part_done(InMessage* m);
  void deliver(InMessage* m, Request* recv);
  void complete(Request* req, hvd_status status, uint64_t bytes);
  // A stream ended (recv_some's -2) or failed (-1). Ended between messages,
  // only that stream is done; otherwise what arrived on the others before is
  // still delivered, then the connection fails.
  void peer_gone(Stream& s, long result);
  // Whether `s` is in the middle of a message (or, stream 0, of a header).
  bool busy(const Stream& s) const;
  // Stream 0 ended and every part announced on it arrived: nothing more can
  // come, so the connection fails (its whole messages stay receivable).
  void end_if_drained();
  void protocol_error(const std::string& what);
  void enqueue(Stream& s, TxItem* item);

  Transport& t_;
  hvd_conn_info info_{};
  bool connecting_;
  Listener* listener_ = nullptr;
  State state_ = State::kSettingUp;
  uint64_t key_ = 0;
  int32_t peer_rank_;
  uint64_t peer_epoch_ = 0;
  hvd_status refuse_with_ = HVD_OK;  // accepting end: what the acks say
  hvd_status status_ = HVD_OK;       // once failed
  int32_t fail_peer_ = -1;
  std::string error_;
  std::vector<Address> targets_;
  std::string connect_errors_;
  std::vector<Stream> streams_;
  size_t attached_ = 0;
  bool draining_ = false;

  ActiveRequests active_;
  RequestQueue posted_;
  ArrivingMessages arriving_;
  UnexpectedMessages unexpected_;
  uint32_t sends_pending_ = 0;
  uint32_t recvs_pending_ = 0;
  uint32_t next_seq_ = 0;
  uint32_t expect_seq_ = 0;

  // Stream 0: received bytes not parsed yet, and the message whose first
  // part is arriving.
  std::unique_ptr<uint8_t[]> staging_;
  size_t staged_begin_ = 0, staged_end_ = 0;
  InMessage* rx_message_ = nullptr;
  uint64_t rx_offset_ = 0;
  uint64_t rx_remaining_ = 0;
};

}  // namespace hvd_tcp
