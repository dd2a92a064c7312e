// The tcp transport of one process: listeners, connections, the pools, the
// epoll set that is also the wait fd, and abort.
#pragma once

#include <sys/epoll.h>

#include <memory>
#include <unordered_set>
#include <vector>

#include "addresses.h"
#include "buffer_pool.h"
#include "common/request_pool.h"
#include "horovod/transport.h"
#include "horovod_plugin/abort_latch.h"
#include "options.h"
#include "request.h"

namespace hvd_tcp {

class Connection;
class Listener;

// What an epoll event points at.
struct EventSource {
  enum Kind { kAbort, kListener, kIncoming, kStream } kind;
  void* owner;
  uint32_t index = 0;  // kStream: which stream of the connection
};

class Transport {
 public:
  explicit Transport(const hvd_host* host);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const hvd_host* host() const { return host_; }
  const Options& options() const { return options_; }
  void properties(hvd_transport_properties* props) const;

  hvd_status listen(void* handle, Listener** out);
  hvd_status accept(Listener* listener, const hvd_conn_info* info,
                    Connection** out);
  hvd_status connect(const void* handle, const hvd_conn_info* info,
                     Connection** out);
  void close_listener(Listener* listener);
  void close_connection(Connection* conn);
  // An accepted connection, handed out by accept(), is the transport's.
  void adopt(Connection* conn) { connections_.insert(conn); }

  // Handles whatever the sockets have ready. Whether anything was.
  bool progress();
  hvd_status test(Request* req, int32_t* done, hvd_completion* out);
  int wait_fd() const { return epoll_fd_; }
  hvd_status wait_arm();

  void abort(hvd_status reason, int32_t peer);  // any thread
#ifdef HOROVOD_FAULT_HOOKS
  // Test only (fault_hook.h): cuts every data connection from inside and
  // fails what is pending naming this rank.
  void sever();
#endif
  hvd_status aborted();  // applies a pending abort; its reason or HVD_OK

  // Where connections to `family` addresses come from: the configured
  // interfaces' address of that family, or null for any.
  const Address* source_for(int family) const;

  Request* new_request(bool send);
  void finish(Request* req, hvd_status status, int32_t peer, uint64_t bytes);
  TxItem* new_item() { return items_.take(); }
  void free_item(TxItem* item) { items_.put(item); }
  InMessage* new_message() { return messages_.take(); }
  // Returns the message and its buffer, if it has one, to the pools.
  void free_message(InMessage* message) {
    buffers_.put(message->data, message->capacity);
    messages_.put(message);
  }
  // A message of `bytes` arrived; `early`: before its receive was posted.
  void count_arrival(uint64_t bytes, bool early) {
    ++arrived_.messages;
    arrived_.bytes += bytes;
    if (early) {
      ++arrived_.early_messages;
      arrived_.early_bytes += bytes;
    }
  }
  // A buffer for a message of `bytes` whose receive is not posted yet.
  bool give_buffer(InMessage* message, uint64_t bytes) {
    message->data = buffers_.take(bytes, &message->capacity);
    return message->data != nullptr;
  }
  // Somewhere to receive bytes that are dropped.
  uint8_t* scratch() { return scratch_.get(); }
  static constexpr size_t kScratchBytes = 64u << 10;

  void watch(int fd, EventSource* source, uint32_t events);
  void modify(int fd, EventSource* source, uint32_t events);
  void unwatch(int fd);

 private:
  void apply_abort(hvd_status reason, int32_t peer);

  const hvd_host* host_;
  Options options_;
  std::vector<Address> sources_;  // from the configured interfaces
  double bandwidth_gbps_;         // the links', or an estimate
  int epoll_fd_ = -1;
  int abort_fd_ = -1;
  EventSource abort_source_{EventSource::kAbort, this};
  std::unique_ptr<uint8_t[]> scratch_;

  std::unordered_set<Connection*> connections_;
  std::unordered_set<Listener*> listeners_;

  hvd_transport_common::RequestPool<Request> requests_;
  hvd_transport_common::Pool<TxItem> items_;
  hvd_transport_common::Pool<InMessage> messages_;
  // Free buffers of unexpected messages kept for the next ones: a few
  // fusion buffers' worth.
  BufferPool buffers_{256u << 20};
  // Logged at finalize: what costs a copy shows here.
  struct {
    uint64_t messages = 0, bytes = 0, early_messages = 0, early_bytes = 0;
  } arrived_;

  hvd_plugin::AbortLatch abort_;
};

}  // namespace hvd_tcp
