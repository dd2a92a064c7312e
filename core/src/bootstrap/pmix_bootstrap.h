// The bootstrap of a job started by a PMIx launcher (mpirun / Open MPI,
// Slurm's srun): rank and size from PMIx_Init and PMIX_JOB_SIZE, the store
// from PMIx_Put / Commit / Get, collectives from PMIx_Fence.
#pragma once

#include <mutex>

#include "bootstrap/bootstrap.h"

namespace hvd {

class PmixBootstrap : public Bootstrap {
 public:
  // PMIx_Init, then learns the host layout within `start_timeout`.
  explicit PmixBootstrap(std::chrono::milliseconds start_timeout);
  ~PmixBootstrap() override;
  std::string backend() const override { return "pmix"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void put(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(int rank, const std::string& key,
                           std::chrono::milliseconds timeout) override;
  std::vector<std::vector<uint8_t>> allgather(
      const std::vector<uint8_t>& mine) override;
  void barrier() override;

 private:
  void fence(bool collect_data);

  std::string nspace_;
  int rank_ = 0, size_ = 1;
  std::mutex mutex_;  // put + commit pairs stay together
};

}  // namespace hvd
