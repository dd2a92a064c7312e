// What the conformance suite needs from the ranks it runs on: who is who, a
// small key-value store and collectives to exchange listen handles and
// results, the host table to initialise the transport with, and a way to end
// one rank abruptly. The installed tool runs it over processes started by
// horovodrun (the core's Bootstrap); the unit test over threads of one
// process.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "horovod/host.h"

namespace hvd_conformance {

using Bytes = std::vector<uint8_t>;

class World {
 public:
  virtual ~World() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The table every transport instance of this rank is initialised with.
  virtual const hvd_host* host() = 0;

  // A value under (this rank, key), and another rank's; get throws
  // std::runtime_error after `timeout`.
  virtual void put(const std::string& key, const Bytes& value) = 0;
  virtual Bytes get(int rank, const std::string& key,
                    std::chrono::milliseconds timeout) = 0;

  // Every rank's value under `key`, in rank order. Built on put and get
  // with a key per exchange, so a rank that fell out of step (a case that
  // failed half-way on one rank) times out instead of pairing with the
  // wrong exchange.
  std::vector<Bytes> allgather(const std::string& key, const Bytes& mine,
                               std::chrono::milliseconds timeout) {
    put(key, mine);
    std::vector<Bytes> all;
    for (int r = 0; r < size(); ++r) all.push_back(get(r, key, timeout));
    return all;
  }
  void barrier(const std::string& key, std::chrono::milliseconds timeout) {
    allgather(key, {}, timeout);
  }

  // Ends this rank the way a crash would. A process exits on the spot,
  // cleaning up nothing; a thread rank first calls `release` (which closes
  // what the transport holds, as the kernel would for a process) and then
  // leaves the suite.
  [[noreturn]] virtual void die(const std::function<void()>& release) = 0;
};

}  // namespace hvd_conformance
