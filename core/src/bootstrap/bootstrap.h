// How ranks find each other: rank, size, host identity, and a small
// key-value store (put / get / allgather / barrier) shared by the job.
//
// Backends: the horovodrun rendezvous service (HOROVOD_RENDEZVOUS_ADDR,
// HOROVOD_RENDEZVOUS_PORT, HOROVOD_SECRET_KEY; every message HMAC-SHA256
// authenticated), PMIx (mpirun, srun: PMIX_RANK and friends), and a
// single-process default (size 1). Selected by [bootstrap] backend ("auto"
// picks the first whose environment is present).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hvd {

class Config;

struct HostLayout {
  int local_rank = 0, local_size = 1;  // among ranks of this host
  int cross_rank = 0, cross_size = 1;  // this host among hosts
  std::string hostname;
  std::vector<int> host_of;  // world rank -> host index (hosts in order of
                             // their lowest rank)
};

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual std::string backend() const = 0;  // "rendezvous", "pmix", "single"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The world epoch: 0 for a fixed job; an elastic job's launcher numbers
  // each new world (HOROVOD_WORLD_EPOCH), and every handshake carries it so
  // that nothing of an earlier world is matched by a later one.
  virtual uint64_t epoch() const { return 0; }
  // Filled at creation: an allgather of host identities (HOROVOD_HOSTNAME,
  // else gethostname()); under horovodrun it must agree with the launcher's
  // HOROVOD_LOCAL_RANK etc. (HVD_ERR_MISMATCH otherwise).
  const HostLayout& layout() const { return layout_; }

  // Publishes `value` under (this rank, key). Keys may be re-put.
  virtual void put(const std::string& key,
                   const std::vector<uint8_t>& value) = 0;
  // Waits up to `timeout` for (rank, key); throws hvd::Error HVD_ERR_TIMEOUT
  // naming the key and rank.
  virtual std::vector<uint8_t> get(int rank, const std::string& key,
                                   std::chrono::milliseconds timeout) = 0;
  // Every rank's `mine`, in rank order. Collective.
  virtual std::vector<std::vector<uint8_t>> allgather(
      const std::vector<uint8_t>& mine);
  virtual void barrier();

  // The backend chosen by the configuration and environment.
  static std::unique_ptr<Bootstrap> create(const Config& config);

 protected:
  void compute_layout();  // an allgather of host identities
  HostLayout layout_;
  uint64_t collective_seq_ = 0;  // names successive allgathers/barriers

  // A key for the next collective, unused by any earlier one of this
  // process: "hvd.bootstrap.<instance>.<seq>". Instances are numbered per
  // epoch in the order of their first collective, the same on every rank
  // of the epoch (a rank that joined an elastic job later included).
  std::string next_collective_key();
  // Bounds collectives (allgather, barrier): runtime.start_timeout.
  std::chrono::milliseconds collective_timeout_{30000};
  // `timeout` within [0, 2^32 - 1 ms] (about 49 days), so that deadlines
  // computed from it cannot overflow.
  static std::chrono::milliseconds bounded(std::chrono::milliseconds timeout);

 private:
  static uint64_t next_instance(uint64_t epoch);
  int64_t instance_ = -1;  // numbered at the first collective
};

}  // namespace hvd
