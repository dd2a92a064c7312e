// One connection of the gloo transport: a two-rank Gloo context over TCP,
// set up and then served by the connection's control thread; a second
// thread waits for large receives to land and for control records to leave.
// See protocol.h for what travels.
#pragma once

#include <gloo/transport/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "horovod/transport.h"
#include "protocol.h"
#include "request.h"

namespace hvd_gloo {

class Transport;

class Connection {
 public:
  enum class Role { kAcceptor, kConnector };
  // Takes over `fd`: the accepted socket (acceptor) or -1 (connector, which
  // connects to `handle`).
  Connection(Transport& transport, Role role, int fd, const Handle& handle,
             const hvd_conn_info& info);
  ~Connection();  // stops the threads; pending requests fail (shut down)
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Transport& transport() { return transport_; }
  // HVD_AGAIN while setting up, then HVD_OK or why it failed (`why`).
  hvd_status state(std::string* why) const;
  int32_t peer_rank() const { return peer_rank_.load(); }

  hvd_status isend(const void* buf, size_t bytes, uint64_t tag, Request** out);
  hvd_status irecv(void* buf, size_t bytes, uint64_t tag, Request** out);

  // Any thread: every pending request completes with `reason` and `peer`,
  // and so does every later one.
  void abort(hvd_status reason, int32_t peer);
  // The peer's rank once the connection failed through the peer's fault
  // (HVD_ERR_PEER_FAILED); -1 otherwise.
  int32_t failed_peer() const;
  // Test only (fault_hook.h): closes the Gloo pair from this side.
  void sever();

 private:
  using Buffer = gloo::transport::UnboundBuffer;

  struct Posted {  // a receive waiting for its message
    Request* req;
    void* buf;
    size_t bytes;
    uint64_t tag;
  };
  struct Unexpected {  // a message waiting for its receive
    uint64_t seq;
    uint64_t tag;
    uint64_t length;
    std::vector<char> inline_bytes;
  };
  struct Wait {  // what the data thread waits for, in order
    bool recv;   // a large message landing, else a control record leaving
    std::unique_ptr<Buffer> buffer;
    std::vector<char> storage;  // the record, or the bytes of a truncation
    Request* req = nullptr;     // receive: completed when it lands
    uint64_t seq = 0;
    hvd_status status = HVD_OK;
    uint64_t bytes = 0;
  };
  struct AwaitingAck {
    Request* req;
    uint64_t bytes;
    std::unique_ptr<Buffer> buffer;
  };

  void run_control();
  void set_up();
  void serve();
  void run_data();
  void handle_record(const char* data);
  // Under mu_.
  void deliver(Request* req, void* buf, size_t capacity, uint64_t seq,
               uint64_t length, const char* inline_bytes);
  void send_record(const Control& record, const void* payload, size_t bytes);
  void post_send(Request* r, const void* buf, size_t bytes, uint64_t tag);
  void fail(hvd_status status, int32_t peer, const std::string& why);
  void fail_locked(hvd_status status, int32_t peer);
  void finish(Request* r, hvd_status status, int32_t peer, uint64_t bytes);
  Request* new_request(const std::shared_ptr<std::atomic<uint32_t>>& counter);
  int other() const { return role_ == Role::kAcceptor ? 1 : 0; }

  Transport& transport_;
  const Role role_;
  int fd_;
  const Handle handle_;
  const hvd_conn_info info_;
  std::atomic<int32_t> peer_rank_{-1};

  std::shared_ptr<gloo::transport::Context> context_;
  gloo::transport::Pair* pair_ = nullptr;
  std::unique_ptr<Buffer> records_[2];
  std::vector<char> record_storage_[2];

  mutable std::mutex mu_;
  std::condition_variable data_cv_;
  std::atomic<hvd_status> state_{HVD_AGAIN};
  std::string why_;
  bool stopping_ = false;
  bool serving_ = false;  // records_ are posted
  hvd_status failure_ = HVD_OK;
  int32_t failure_peer_ = -1;
  uint64_t next_seq_ = 0;
  std::list<Posted> posted_;
  std::list<Unexpected> unexpected_;
  std::map<uint64_t, AwaitingAck> awaiting_ack_;
  std::deque<Wait> waits_;
  Buffer* in_hand_ = nullptr;  // the data thread's current wait
  // Buffers of failed transfers, kept until the pair is closed: Gloo may
  // still be moving bytes of one that was under way.
  std::deque<Wait> graveyard_;
  std::shared_ptr<std::atomic<uint32_t>> sends_in_flight_;
  std::shared_ptr<std::atomic<uint32_t>> recvs_in_flight_;

  std::thread control_;
  std::thread data_;
};

}  // namespace hvd_gloo
