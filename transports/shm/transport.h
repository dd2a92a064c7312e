// The shm transport of one process: its connections and listeners, its
// collectives communicators, the request pool, the wait fd (an epoll set
// over the process's eventfd, which peers write to wake it, the wake socket
// of the communicators, and every connection's socket, which reports a peer
// that is gone), abort, and the memory segments it hands out.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/request_pool.h"
#include "horovod/transport.h"
#include "horovod_plugin/abort_latch.h"
#include "memory.h"
#include "options.h"
#include "request.h"

namespace hvd_shm {

class Comm;
class Connection;
class WakeSocket;

// What an epoll event points at.
struct EventSource {
  enum Kind { kWake, kCommWake, kListener, kConnection } kind;
  void* owner;
};

struct Listener {
  Transport* transport = nullptr;
  std::string name;  // abstract socket
  int fd = -1;
  EventSource source{EventSource::kListener, this};
};

class Transport {
 public:
  explicit Transport(const hvd_host* host);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const hvd_host* host() const { return host_; }
  const Options& options() const { return options_; }
  int wake_fd() const { return wake_fd_; }

  void properties(hvd_transport_properties* props) const;

  hvd_status listen(void* handle, Listener** out);
  hvd_status accept(Listener* listener, const hvd_conn_info* info,
                    Connection** out);
  hvd_status connect(const void* handle, const hvd_conn_info* info,
                     Connection** out);
  void close_listener(Listener* listener);
  void close_connection(Connection* conn);

  // One pass over every established connection; now and then, when passes
  // find nothing to do, a look at the sockets for peers that are gone.
  bool progress();  // whether anything moved
  bool progress_collectives();
  hvd_status test(Request* req, int32_t* done, hvd_completion* out);
  int wait_fd() const { return epoll_fd_; }
  hvd_status wait_arm();

  // Any thread. The first reason wins; applied by the core's thread at its
  // next call.
  void abort(hvd_status reason, int32_t peer);
#ifdef HOROVOD_FAULT_HOOKS
  // Test only (fault_hook.h): cuts every data connection from inside and
  // fails what is pending naming this rank.
  void sever();
#endif
  // Applies a pending abort; returns its reason, or HVD_OK when none.
  hvd_status aborted();

  // Requests.
  Request* new_request(RequestKind kind, Connection* conn);
  // Marks `req` complete; test() reports it.
  void finish(Request* req, hvd_status status, int32_t peer, uint64_t bytes);

  // Memory.
  hvd_status mem_alloc(size_t bytes, hvd_device device, void** ptr,
                       MemoryRegion** mr);
  hvd_status mem_free(void* ptr, MemoryRegion* mr);
  hvd_status mr_reg(void* buf, size_t bytes, hvd_device device,
                    MemoryRegion** mr);
  hvd_status mr_dereg(MemoryRegion* mr);
  hvd_status mr_export(MemoryRegion* mr, void* key, size_t* key_bytes);
  // Whether [buf, buf + bytes) lies in one of our segments (`mr` first,
  // when it is one of ours); fills its id and offset.
  bool locate(const void* buf, uint64_t bytes, const MemoryRegion* mr,
              uint64_t* segment, uint64_t* offset) const;
  // A peer's memory segment, mapped here once however often it is used.
  std::shared_ptr<Segment> map_peer_segment(const std::string& name);

  // Collectives communicators. comm_create: HVD_AGAIN until every member
  // has joined (the same call is repeated meanwhile).
  hvd_status comm_create(const hvd_team& team, Comm** out);
  void comm_destroy(Comm* comm);
  // The socket communicators' peers wake this process through (created on
  // first use).
  WakeSocket& wake_socket();
  // Wakes this process's own wait fd (abort from another thread).
  void wake_self();

  // Connections entering and leaving the progress set.
  void established(Connection* conn);
  void watch(int fd, EventSource* source);
  void unwatch(int fd);

 private:
  void poll_events();
  void prune();  // drops failed connections from the progress set
  void disarm();
  void apply_abort(hvd_status reason, int32_t peer);

  const hvd_host* host_;
  Options options_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  EventSource wake_source_{EventSource::kWake, this};

  std::unordered_set<Connection*> connections_;
  std::vector<Connection*> progressing_;  // established, not failed
  std::unordered_set<Listener*> listeners_;

  std::vector<Comm*> comms_;                   // created
  std::vector<Comm*> joining_;                 // comm_create answered HVD_AGAIN
  std::map<int32_t, uint32_t> comms_per_set_;  // names their segments
  std::unique_ptr<WakeSocket> comm_wake_;
  EventSource comm_wake_source_{EventSource::kCommWake, this};

  hvd_transport_common::RequestPool<Request> requests_;

  std::vector<MemoryRegion*> regions_;  // all, from mem_alloc and mr_reg
  std::map<std::string, std::weak_ptr<Segment>> peer_segments_;

  bool armed_ = false;
  uint32_t idle_passes_ = 0;

  hvd_plugin::AbortLatch abort_;
};

}  // namespace hvd_shm
