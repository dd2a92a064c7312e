// In-process ranks for control-plane tests: a shared key-value map stands in
// for the bootstrap, and each rank is a thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "control/control_plane.h"

namespace hvd::test {

class FakeStore {
 public:
  void put(int rank, const std::string& key,
           const std::vector<uint8_t>& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[{rank, key}] = value;
    changed_.notify_all();
  }
  std::vector<uint8_t> get(int rank, const std::string& key,
                           std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto found = [&] { return values_.count({rank, key}) > 0; };
    if (!changed_.wait_for(lock, timeout, found))
      throw Error(HVD_ERR_TIMEOUT, "fake bootstrap: no key '" + key +
                                       "' from rank " + std::to_string(rank));
    return values_[{rank, key}];
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::pair<int, std::string>, std::vector<uint8_t>> values_;
};

class FakeBootstrap : public Bootstrap {
 public:
  FakeBootstrap(FakeStore& store, int rank, int size, std::string host = "")
      : store_(store), rank_(rank), size_(size) {
    layout_.hostname = host.empty() ? "host" + std::to_string(rank) : host;
    layout_.host_of.assign(size, 0);
  }
  std::string backend() const override { return "fake"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void put(const std::string& key, const std::vector<uint8_t>& value) override {
    store_.put(rank_, key, value);
  }
  std::vector<uint8_t> get(int rank, const std::string& key,
                           std::chrono::milliseconds timeout) override {
    return store_.get(rank, key, timeout);
  }

 private:
  FakeStore& store_;
  int rank_, size_;
};

// Short enough that a broken test fails fast, long enough for a loaded CI
// machine.
inline ControlPlaneOptions test_options() {
  ControlPlaneOptions options;
  options.job_id = "control-test";
  options.start_timeout = std::chrono::seconds(20);
  return options;
}

// Runs body(plane) for each rank in `ranks` of a world of `size`, each on
// its own thread with its own ControlPlane; returns what each threw
// (nullptr: nothing), indexed like `ranks`.
inline std::vector<std::exception_ptr> run_ranks(
    FakeStore& store, int size, const std::vector<int>& ranks,
    const ControlPlaneOptions& options,
    const std::function<void(ControlPlane&)>& body) {
  std::vector<std::exception_ptr> errors(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        FakeBootstrap bootstrap(store, ranks[i], size);
        ControlPlane plane(bootstrap, options);
        body(plane);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

inline std::vector<int> all_ranks(int size) {
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(r);
  return ranks;
}

inline std::string describe(const std::exception_ptr& error) {
  if (!error) return "no error";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace hvd::test
