// One authenticated connection to the horovodrun rendezvous service: connect
// (retrying until a deadline), read the greeting's nonce, then request /
// response exchanges, each frame tagged and checked (PROTOCOL.md).
// Not thread-safe: the owner serialises calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/rendezvous_protocol.h"

namespace hvd::rendezvous {

class Connection {
 public:
  using Clock = std::chrono::steady_clock;

  Connection(const std::string& address, int port, std::vector<uint8_t> secret,
             Clock::time_point deadline);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends `op` with `fields` and waits until `deadline` for its response.
  Response call(Op op, const std::vector<uint8_t>& fields,
                Clock::time_point deadline);

  // "rendezvous service at 10.0.0.1:4242", for messages.
  const std::string& name() const { return name_; }

 private:
  void connect_until(const std::string& address, int port,
                     Clock::time_point deadline);
  void send_all(const uint8_t* data, size_t size, Clock::time_point deadline);
  void recv_all(uint8_t* data, size_t size, Clock::time_point deadline);
  void wait_ready(short events, Clock::time_point deadline, const char* what);

  std::string name_;
  std::vector<uint8_t> secret_;
  std::vector<uint8_t> nonce_;
  uint64_t seq_ = 0;
  int fd_ = -1;
};

}  // namespace hvd::rendezvous
