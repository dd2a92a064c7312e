// The bootstrap of a process that is the whole job (size 1): the store is a
// map in this process.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>

#include "bootstrap/bootstrap.h"

namespace hvd {

class SingleBootstrap : public Bootstrap {
 public:
  SingleBootstrap();
  std::string backend() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void put(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(int rank, const std::string& key,
                           std::chrono::milliseconds timeout) override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;  // another thread may put what we wait for
  std::map<std::string, std::vector<uint8_t>> store_;
};

}  // namespace hvd
