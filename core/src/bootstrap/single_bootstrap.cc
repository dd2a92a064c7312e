#include "bootstrap/single_bootstrap.h"

#include "common/error.h"

namespace hvd {

SingleBootstrap::SingleBootstrap() { compute_layout(); }

void SingleBootstrap::put(const std::string& key,
                          const std::vector<uint8_t>& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    store_[key] = value;
  }
  changed_.notify_all();
}

std::vector<uint8_t> SingleBootstrap::get(int rank, const std::string& key,
                                          std::chrono::milliseconds timeout) {
  if (rank != 0) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "bootstrap (single): get of key '" + key + "' from rank " +
                    std::to_string(rank) + ", but the job has only rank 0");
  }
  timeout = bounded(timeout);
  std::unique_lock<std::mutex> lock(mutex_);
  auto found = store_.end();
  changed_.wait_for(lock, timeout, [&] {
    found = store_.find(key);
    return found != store_.end();
  });
  if (found == store_.end()) {
    throw Error(HVD_ERR_TIMEOUT,
                "bootstrap (single): timed out after " +
                    std::to_string(timeout.count()) + " ms waiting for key '" +
                    key + "' of rank 0",
                0);
  }
  return found->second;
}

}  // namespace hvd
