// The bootstrap as one runtime generation (one hvd_init) sees it: every key
// put or got is prefixed with the generation, so a later hvd_init in the
// same job never reads a value an earlier one left behind (a control-plane
// or transport address, say, that another rank has not re-put yet).
// Generations are counted per process and world epoch, in hvd_init order:
// the same on every rank of the epoch, one that joined an elastic job later
// included.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "bootstrap/bootstrap.h"

namespace hvd::runtime {

class GenerationBootstrap final : public Bootstrap {
 public:
  GenerationBootstrap(std::unique_ptr<Bootstrap> inner, uint64_t generation)
      : inner_(std::move(inner)),
        prefix_("hvd.init." + std::to_string(generation) + ".") {
    layout_ = inner_->layout();
  }

  // This process's next generation in `epoch`.
  static uint64_t next_generation(uint64_t epoch) {
    static std::mutex mutex;
    static std::map<uint64_t, uint64_t> count;
    std::lock_guard<std::mutex> lock(mutex);
    return count[epoch]++;
  }

  std::string backend() const override { return inner_->backend(); }
  uint64_t epoch() const override { return inner_->epoch(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void put(const std::string& key, const std::vector<uint8_t>& value) override {
    inner_->put(prefix_ + key, value);
  }
  std::vector<uint8_t> get(int rank, const std::string& key,
                           std::chrono::milliseconds timeout) override {
    return inner_->get(rank, prefix_ + key, timeout);
  }
  std::vector<std::vector<uint8_t>> allgather(
      const std::vector<uint8_t>& mine) override {
    return inner_->allgather(mine);
  }
  void barrier() override { inner_->barrier(); }

 private:
  std::unique_ptr<Bootstrap> inner_;
  std::string prefix_;
};

}  // namespace hvd::runtime
