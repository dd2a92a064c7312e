// Autotune's part of the background thread's cycle (autotune.h).
#include "common/log.h"
#include "runtime/autotune.h"
#include "runtime/fusion.h"
#include "runtime/process_set.h"
#include "runtime/reducers.h"
#include "runtime/runtime.h"

namespace hvd::runtime {

void Runtime::start_autotune() {
  if (rank_ != 0 || !config_.get_bool("runtime.autotune")) return;
  TuneSetting defaults;
  defaults.fusion_threshold = fusion_threshold_;
  defaults.cycle_time = cycle_time_;
  // The choices: what runs the common case, float32 sums on the whole job
  // (a reducer of another op, such as adasum's, is none).
  std::vector<std::string> names =
      reducers_->running(HVD_COLL_ALLREDUCE, HVD_OP_SUM, HVD_FLOAT32,
                         sets_.front()->planning_team->view(), HVD_MEM_HOST);
  autotuner_ =
      std::make_unique<Autotuner>(defaults, names, Autotuner::Options{},
                                  config_.get_string("runtime.autotune_log"));
  HVD_LOG(INFO) << "autotune: starting from " << defaults.describe();
}

void Runtime::tune(ResponseList& out) {
  if (autotuner_->settled()) return;
  uint64_t bytes = 0;
  for (const Response& r : out.responses) {
    if (r.kind != ResponseKind::kData) continue;
    const ProcessSet* set = find_set(r.process_set);
    if (set) bytes += response_bytes(r, set->size());
  }
  std::optional<TuneSetting> next =
      autotuner_->note_cycle(bytes, std::chrono::steady_clock::now());
  if (!next) return;
  out.tuned = true;
  out.fusion_threshold = next->fusion_threshold;
  out.cycle_time_ns = next->cycle_time.count();
  preferred_reducer_ = next->reducer;
  if (autotuner_->settled()) {
    HVD_LOG(INFO) << "autotune: settled on " << next->describe();
  }
}

void Runtime::apply_tuning(const ResponseList& list) {
  if (!list.tuned) return;
  fusion_threshold_ = list.fusion_threshold;
  cycle_time_ = std::chrono::nanoseconds(list.cycle_time_ns);
}

}  // namespace hvd::runtime
