#include "runtime/reducers.h"

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "plugin/host_services.h"
#include "plugin/loader.h"

namespace hvd::runtime {

Reducer::Reducer(std::string describe, const hvd_reducer_api* api,
                 hvd_reducer* instance, std::shared_ptr<void> owner)
    : name_(api->name ? api->name : "?"),
      describe_(std::move(describe)),
      api_(api),
      instance_(instance),
      owner_(std::move(owner)) {}

Reducer::~Reducer() {
  hvd_status s = api_->finalize(instance_);
  if (s != HVD_OK) {
    HVD_LOG(WARNING) << error("finalize failed");
  }
}

std::string Reducer::error(const std::string& what) const {
  std::string message = describe_ + ": " + what;
  const char* detail = api_->last_error ? api_->last_error(instance_) : "";
  if (detail && *detail) message += ": " + std::string(detail);
  return message;
}

namespace {

struct Owner {
  std::shared_ptr<Plugin> plugin;
  std::unique_ptr<HostServices> host;
};

const hvd_collective kRuled[] = {HVD_COLL_ALLREDUCE, HVD_COLL_ALLGATHER,
                                 HVD_COLL_BROADCAST, HVD_COLL_ALLTOALL,
                                 HVD_COLL_REDUCESCATTER};

}  // namespace

ReducerSet::ReducerSet(const PluginLoader& loader, const Config& config,
                       Bootstrap& bootstrap, TimelineHooks* timeline) {
  read_hierarchical(config);
  std::vector<std::string> names = config.get_strings("reducer.load");
  if ((hierarchical_allreduce_ || hierarchical_allgather_) &&
      std::find(names.begin(), names.end(), "hierarchical") == names.end()) {
    names.push_back("hierarchical");
  }
  for (const std::string& name : names) {
    auto owner = std::make_shared<Owner>();
    owner->plugin = loader.load(HVD_PLUGIN_REDUCER, name);
    HostServicesOptions options;
    options.kind = HVD_PLUGIN_REDUCER;
    options.name = owner->plugin->header().name;
    options.config = &config;
    options.bootstrap = &bootstrap;
    options.timeline = timeline;
    owner->host = std::make_unique<HostServices>(options);
    const hvd_reducer_api& api = owner->plugin->reducer();
    hvd_reducer* instance = init_reducer(*owner->plugin, owner->host->table());
    std::string describe = owner->plugin->describe();
    reducers_.push_back(
        std::make_unique<Reducer>(describe, &api, instance, owner));
    HVD_LOG(INFO) << "reducer: " << describe;
  }
  if (reducers_.empty()) {
    throw Error(HVD_ERR_CONFIG, config.source("reducer.load") +
                                    ": reducer.load names no reducer");
  }
  check_rules(config);
}

ReducerSet::ReducerSet(std::vector<std::unique_ptr<Reducer>> reducers,
                       const Config& config)
    : reducers_(std::move(reducers)) {
  read_hierarchical(config);
  check_rules(config);
}

void ReducerSet::read_hierarchical(const Config& config) {
  hierarchical_allreduce_ = config.get_bool("runtime.hierarchical_allreduce");
  hierarchical_allgather_ = config.get_bool("runtime.hierarchical_allgather");
}

void ReducerSet::check_rules(const Config& config) {
  for (hvd_collective c : kRuled) {
    std::vector<ReducerRule> rules = config.rules(c);
    for (const ReducerRule& rule : rules) {
      if (index_of(rule.reducer) < 0) {
        throw Error(HVD_ERR_CONFIG,
                    rule.source + ": rule names reducer '" + rule.reducer +
                        "', which is not loaded (reducer.load: " + names() +
                        ")");
      }
    }
    rules_[c] = std::move(rules);
  }
}

int ReducerSet::index_of(const std::string& name) const {
  for (size_t i = 0; i < reducers_.size(); ++i) {
    if (reducers_[i]->name() == name) return static_cast<int>(i);
  }
  return -1;
}

std::string ReducerSet::names() const {
  std::string out;
  for (const auto& r : reducers_) out += (out.empty() ? "" : ", ") + r->name();
  return out;
}

namespace {

// One reducer's ranges for a collective of `dtype` reduced with `op`:
// through score_op where the plugin has it (1.2), else through score(),
// which stands for every op but ADASUM.
ReducerScores score_reducer(const Reducer& r, hvd_collective collective,
                            hvd_reduce_op op, hvd_dtype dtype,
                            const hvd_team* team, hvd_mem_kind mem) {
  ReducerScores scores;
  scores.name = r.name();
  hvd_score_range ranges[32];
  for (hvd_score_range& range : ranges) {
    range = hvd_score_range{};
    range.struct_size = sizeof(hvd_score_range);
  }
  size_t count = 32;
  const hvd_reducer_api& api = r.api();
  hvd_status s = HVD_ERR_UNSUPPORTED;
  if (HVD_HAS_FIELD(&api, hvd_reducer_api, score_op) && api.score_op) {
    s = api.score_op(r.instance(), collective, op, dtype, team, mem, ranges,
                     &count);
    scores.runs_op = s == HVD_OK && count > 0;
  } else {
    scores.runs_op = op != HVD_OP_ADASUM;
    if (api.score) {
      s = api.score(r.instance(), collective, team, mem, ranges, &count);
    }
  }
  if (s == HVD_OK) {
    scores.ranges.assign(ranges, ranges + std::min<size_t>(count, 32));
  }
  return scores;
}

bool reduces(hvd_collective collective) {
  return collective == HVD_COLL_ALLREDUCE ||
         collective == HVD_COLL_REDUCESCATTER;
}

}  // namespace

const std::vector<ReducerScores>& ReducerSet::scores(hvd_collective collective,
                                                     hvd_reduce_op op,
                                                     hvd_dtype dtype,
                                                     const hvd_team* team,
                                                     hvd_mem_kind mem) {
  if (!reduces(collective)) op = HVD_OP_SUM;
  auto key = std::make_tuple(team->process_set, team->size, team->host_count,
                             collective, op, dtype, mem);
  auto it = scores_.find(key);
  if (it == scores_.end()) {
    std::vector<ReducerScores> all;
    for (const auto& r : reducers_) {
      all.push_back(score_reducer(*r, collective, op, dtype, team, mem));
    }
    it = scores_.emplace(key, std::move(all)).first;
  }
  return it->second;
}

std::vector<std::string> ReducerSet::running(hvd_collective collective,
                                             hvd_reduce_op op, hvd_dtype dtype,
                                             const hvd_team* team,
                                             hvd_mem_kind mem) {
  std::vector<std::string> names;
  for (const ReducerScores& s : scores(collective, op, dtype, team, mem)) {
    if (s.runs_op) names.push_back(s.name);
  }
  return names;
}

void ReducerSet::candidates(hvd_collective collective, hvd_reduce_op op,
                            hvd_dtype dtype, const hvd_team* team,
                            hvd_mem_kind mem, uint64_t bytes,
                            const std::string& first,
                            std::vector<size_t>& out) {
  const std::vector<ReducerScores>& all =
      scores(collective, op, dtype, team, mem);
  static const std::vector<ReducerRule> kNoRules;
  auto rules = rules_.find(collective);
  out = rank_candidates(rules == rules_.end() ? kNoRules : rules->second, all,
                        bytes);
  int named = index_of(first);
  if (named >= 0 && !all[static_cast<size_t>(named)].runs_op) named = -1;
  if (named < 0 &&
      ((collective == HVD_COLL_ALLREDUCE && hierarchical_allreduce_) ||
       (collective == HVD_COLL_ALLGATHER && hierarchical_allgather_))) {
    // Only where it offers this team (more than one host, equal hosts).
    named = index_of("hierarchical");
    if (named >= 0 && std::find(out.begin(), out.end(),
                                static_cast<size_t>(named)) == out.end()) {
      named = -1;
    }
  }
  if (named < 0) return;
  auto at = std::find(out.begin(), out.end(), static_cast<size_t>(named));
  if (at != out.end()) out.erase(at);
  out.insert(out.begin(), static_cast<size_t>(named));
}

}  // namespace hvd::runtime
