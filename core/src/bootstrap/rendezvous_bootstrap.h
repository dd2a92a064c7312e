// The bootstrap of a job started by horovodrun: rank and size from
// HOROVOD_RANK / HOROVOD_SIZE, the store served by horovodrun's rendezvous
// service (HOROVOD_RENDEZVOUS_ADDR, HOROVOD_RENDEZVOUS_PORT,
// HOROVOD_SECRET_KEY, HOROVOD_JOB_ID, and in an elastic job
// HOROVOD_WORLD_EPOCH, the round of the launcher's store; protocol in
// tools/horovodrun/PROTOCOL.md). Thread-safe: a call takes an idle
// connection or opens another, so one thread's long poll (a get waiting for
// a key) never holds up another thread's put.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_connection.h"

namespace hvd {

class RendezvousBootstrap : public Bootstrap {
 public:
  // Connects and joins within `start_timeout`, then learns the host layout.
  explicit RendezvousBootstrap(std::chrono::milliseconds start_timeout);
  std::string backend() const override { return "rendezvous"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  uint64_t epoch() const override { return epoch_; }
  void put(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(int rank, const std::string& key,
                           std::chrono::milliseconds timeout) override;
  std::vector<std::vector<uint8_t>> allgather(
      const std::vector<uint8_t>& mine) override;
  void barrier() override;

 private:
  rendezvous::Response call(rendezvous::Op op, const rendezvous::Writer& fields,
                            std::chrono::milliseconds wait);
  // Throws the error a TIMEOUT or ERROR response describes.
  [[noreturn]] void fail(const rendezvous::Response& response,
                         const std::string& what,
                         std::chrono::milliseconds timeout);
  // Connects and joins as this rank.
  std::unique_ptr<rendezvous::Connection> open(
      std::chrono::milliseconds timeout);
  void check_key(const std::string& key) const;
  void check_launcher_layout() const;

  int rank_ = 0, size_ = 1;
  uint64_t epoch_ = 0;  // HOROVOD_WORLD_EPOCH, sent in JOIN
  std::string address_;
  int port_ = 0;
  std::vector<uint8_t> secret_;
  std::string job_id_;
  std::string service_;  // "rendezvous service at ADDR:PORT"
  std::mutex mutex_;
  std::vector<std::unique_ptr<rendezvous::Connection>> idle_;
};

}  // namespace hvd
