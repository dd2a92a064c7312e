// Autotune's part of the cycle (autotune.h).
#include "common/log.h"
#include "config/config.h"
#include "runtime/autotune.h"
#include "runtime/fusion.h"
#include "runtime/process_set.h"
#include "runtime/reducers.h"
#include "runtime/cycle.h"
#include "runtime/process_sets.h"

namespace hvd::runtime {

void Cycle::start_autotune(const Config& config) {
  if (rank_ != 0 || !config.get_bool("runtime.autotune")) return;
  TuneSetting defaults;
  defaults.fusion_threshold = fusion_threshold_;
  defaults.cycle_time = cycle_time_;
  // The choices: what runs the common case, float32 sums on the whole job
  // (a reducer of another op, such as adasum's, is none).
  std::vector<std::string> names =
      reducers_.running(HVD_COLL_ALLREDUCE, HVD_OP_SUM, HVD_FLOAT32,
                         sets_.world().planning_team->view(), HVD_MEM_HOST);
  autotuner_ =
      std::make_unique<Autotuner>(defaults, names, Autotuner::Options{},
                                  config.get_string("runtime.autotune_log"));
  HVD_LOG(INFO) << "autotune: starting from " << defaults.describe();
}

void Cycle::tune(ResponseList& out, bool announce) {
  if (!autotuner_->settled() && !pending_tuning_) {
    uint64_t bytes = 0;
    for (const Response& r : out.responses) {
      if (r.kind != ResponseKind::kData) continue;
      const ProcessSet* set = sets_.find(r.process_set);
      if (set) bytes += response_bytes(r, set->size());
    }
    pending_tuning_ =
        autotuner_->note_cycle(bytes, std::chrono::steady_clock::now());
  }
  if (!announce || !pending_tuning_) return;
  out.tuned = true;
  out.fusion_threshold = pending_tuning_->fusion_threshold;
  out.cycle_time_ns = pending_tuning_->cycle_time.count();
  out.reducer = pending_tuning_->reducer;
  if (autotuner_->settled()) {
    HVD_LOG(INFO) << "autotune: settled on " << pending_tuning_->describe();
  }
  pending_tuning_.reset();
}

void Cycle::apply_tuning(const ResponseList& list) {
  if (!list.tuned) return;
  fusion_threshold_ = list.fusion_threshold;
  cycle_time_ = std::chrono::nanoseconds(list.cycle_time_ns);
  preferred_reducer_ = list.reducer;
}

}  // namespace hvd::runtime
