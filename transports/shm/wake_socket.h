// A datagram socket in the abstract namespace that peers of a collectives
// communicator write one byte to when they publish a step while this process
// sleeps (its name is in the communicator's segment). The transport watches
// it in its epoll set, so a wake-up lands on the wait fd the core sleeps on.
// Sending needs no connection and no descriptor of the peer's.
#pragma once

#include <string>

namespace hvd_shm {

class WakeSocket {
 public:
  // Binds a new socket under this process's name prefix.
  WakeSocket();
  ~WakeSocket();
  WakeSocket(const WakeSocket&) = delete;
  WakeSocket& operator=(const WakeSocket&) = delete;

  int fd() const { return fd_; }
  const std::string& name() const { return name_; }  // without the NUL
  // Reads every queued wake-up.
  void drain();
  // One byte to the socket `name`; a full queue (the peer has wake-ups
  // pending) or a gone peer is not an error.
  void wake(const char* name) const;

 private:
  int fd_ = -1;
  std::string name_;
};

}  // namespace hvd_shm
