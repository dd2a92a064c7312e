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
class TimelineHooks;
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
  // Loads every name in reducer.load (and "hierarchical" when
  // runtime.hierarchical_allreduce or _allgather asks for it); checks that
  // every rule names one of them. Throws hvd::Error naming the plugin or the
  // rule's file position.
  // `timeline` receives the plugins' timeline hooks (nullptr: none).
  ReducerSet(const PluginLoader& loader, const Config& config,
             Bootstrap& bootstrap, TimelineHooks* timeline = nullptr);
  // For tests: reducers made elsewhere.
  ReducerSet(std::vector<std::unique_ptr<Reducer>> reducers,
             const Config& config);

  size_t size() const { return reducers_.size(); }
  const Reducer& at(size_t i) const { return *reducers_[i]; }
  // -1 when not loaded.
  int index_of(const std::string& name) const;
  std::string names() const;  // "ring, tree"

  // Candidates for a message of `bytes` of `dtype` (reduced with `op`) on
  // `team`, best first, among the reducers that run that op and dtype
  // (scores are asked once per process set, team shape, collective, op,
  // dtype and memory kind). `first`, when loaded and running the op, goes
  // first (the reducer a response names); otherwise "hierarchical" goes
  // first for the collectives that runtime.hierarchical_* selects.
  void candidates(hvd_collective collective, hvd_reduce_op op, hvd_dtype dtype,
                  const hvd_team* team, hvd_mem_kind mem, uint64_t bytes,
                  const std::string& first, std::vector<size_t>& out);
  // The same for float32 sums (what the tools plan and measure).
  std::vector<size_t> candidates(hvd_collective collective,
                                 const hvd_team* team, hvd_mem_kind mem,
                                 uint64_t bytes) {
    std::vector<size_t> out;
    candidates(collective, HVD_OP_SUM, HVD_FLOAT32, team, mem, bytes, "", out);
    return out;
  }
  // Every loaded reducer's scores (in load order, as indexed by at()) for
  // `collective` of `dtype` reduced with `op` on `team`: asked of the
  // plugins once per key above and kept as long as the set.
  const std::vector<ReducerScores>& scores(hvd_collective collective,
                                           hvd_reduce_op op, hvd_dtype dtype,
                                           const hvd_team* team,
                                           hvd_mem_kind mem);
  // The names of the reducers that run `collective` of `dtype` reduced
  // with `op` on `team` at some size.
  std::vector<std::string> running(hvd_collective collective, hvd_reduce_op op,
                                   hvd_dtype dtype, const hvd_team* team,
                                   hvd_mem_kind mem);

 private:
  void check_rules(const Config& config);
  void read_hierarchical(const Config& config);

  std::vector<std::unique_ptr<Reducer>> reducers_;
  std::map<hvd_collective, std::vector<ReducerRule>> rules_;
  bool hierarchical_allreduce_ = false, hierarchical_allgather_ = false;
  // Keyed by process set, team size and host count (nested collectives ask
  // for sub-teams of a set), collective, op, dtype and memory kind.
  std::map<std::tuple<int32_t, int32_t, int32_t, hvd_collective, hvd_reduce_op,
                      hvd_dtype, hvd_mem_kind>,
           std::vector<ReducerScores>>
      scores_;
};

}  // namespace hvd::runtime
