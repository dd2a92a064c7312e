// N ranks as threads of one process, for running the conformance suite and
// transport tests without a launcher. Each rank gets a minimal host table of
// its own (logging to stderr, its configuration values, the world, a
// key-value store shared by the threads, memory).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "horovod/host.h"
#include "world.h"

namespace hvd_transport_test {

using hvd_conformance::Bytes;

// A configuration value for the plugin's table (an integer or a string).
struct Setting {
  std::string key;
  bool is_int = false;
  int64_t int_value = 0;
  std::string string_value;
};
Setting setting(const std::string& key, int64_t value);
Setting setting(const std::string& key, const std::string& value);

class ThreadJob {
 public:
  ThreadJob(int size, std::string plugin_name, std::vector<Setting> settings);
  ~ThreadJob();

  // Runs body on every rank, each in its own thread, and returns when all
  // have finished (a rank that dies finishes early).
  void run(const std::function<void(hvd_conformance::World&)>& body);

  // The config_error reports of a rank: "key: message".
  const std::vector<std::string>& config_errors(int rank) const;

  struct Rank;
  struct Store {
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::pair<int, std::string>, Bytes> values;
  };

 private:
  int size_;
  Store store_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace hvd_transport_test
