// The reducer plugins named in reducer.load, loaded and initialised, and
// the choice among them for each response (see planner.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "config/config.h"
#include "horovod/reducer.h"
#include "runtime/planner.h"

namespace hvd {
class Bootstrap;
class PluginLoader;
}  // namespace hvd

namespace hvd::runtime {

class Reducer {
 public:
  Reducer(std::string describe, const hvd_reducer_api* api,
          hvd_reducer* instance, std::shared_ptr<void> owner);
  ~Reducer();  // finalize
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  const std::string& name() const { return name_; }
  const std::string& describe() const { return describe_; }
  const hvd_reducer_api& api() const { return *api_; }
  hvd_reducer* instance() const { return instance_; }
  // "<describe>: <what>: <last_error>".
  std::string error(const std::string& what) const;

 private:
  std::string name_, describe_;
  const hvd_reducer_api* api_;
  hvd_reducer* instance_;
  std::shared_ptr<void> owner_;
};

class ReducerSet {
 public:
  // Loads every name in reducer.load; checks that every rule names one of
  // them. Throws hvd::Error naming the plugin or the rule's file position.
  ReducerSet(const PluginLoader& loader, const Config& config,
             Bootstrap& bootstrap);
  // For tests: reducers made elsewhere.
  ReducerSet(std::vector<std::unique_ptr<Reducer>> reducers,
             const Config& config);

  size_t size() const { return reducers_.size(); }
  const Reducer& at(size_t i) const { return *reducers_[i]; }
  // -1 when not loaded.
  int index_of(const std::string& name) const;
  std::string names() const;  // "ring, tree"

  // Candidates for a message of `bytes` on `team`, best first (scores are
  // asked once per process set, collective and memory kind). `first`, when
  // loaded, goes first (the reducer a response names).
  void candidates(hvd_collective collective, const hvd_team* team,
                  hvd_mem_kind mem, uint64_t bytes, const std::string& first,
                  std::vector<size_t>& out);
  std::vector<size_t> candidates(hvd_collective collective,
                                 const hvd_team* team, hvd_mem_kind mem,
                                 uint64_t bytes) {
    std::vector<size_t> out;
    candidates(collective, team, mem, bytes, "", out);
    return out;
  }

 private:
  void check_rules(const Config& config);

  std::vector<std::unique_ptr<Reducer>> reducers_;
  std::map<hvd_collective, std::vector<ReducerRule>> rules_;
  std::map<std::tuple<int32_t, hvd_collective, hvd_mem_kind>,
           std::vector<ReducerScores>>
      scores_;
};

}  // namespace hvd::runtime
