// A tcp listener: its sockets, the connections arriving on them, and the
// grouping of a connection's streams (each arrives as its own socket and
// says in its Hello which connection and which stream it is).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "protocol.h"
#include "transport.h"

namespace hvd_tcp {

class Connection;

class Listener {
 public:
  Listener(Transport& transport, const Options& options);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  Transport& transport() { return t_; }
  void fill_handle(void* handle) const;

  // Takes every waiting socket, reads Hellos, and joins each stream to its
  // connection; a connection seen for the first time waits for accept().
  void pump();
  // The next new connection, or null.
  Connection* take();
  // A connection still gathering streams is being closed.
  void forget(Connection* conn);

 private:
  struct Incoming {
    int fd = -1;
    Hello hello{};
    size_t got = 0;
    EventSource source{EventSource::kIncoming, nullptr};
  };

  // Accepted sockets still reading their Hello, at most.
  static constexpr size_t kMaxIncoming = 256;

  Transport& t_;
  std::vector<int> fds_;
  std::vector<Address> addresses_;  // as advertised
  std::vector<std::unique_ptr<EventSource>> sources_;
  std::vector<std::unique_ptr<Incoming>> incoming_;
  std::map<uint64_t, Connection*> gathering_;  // by connection key
  std::deque<Connection*> fresh_;              // not handed out yet
};

}  // namespace hvd_tcp
