// The diagnostics the runtime starts: the timeline (from the configuration
// or hvd_start_timeline), the flight recorder and, on world rank 0, the
// stall inspector. The cycle marks them (cycle_marks.cc).
#include "common/error.h"
#include "common/log.h"
#include "runtime/flight_recorder.h"
#include "runtime/runtime.h"
#include "runtime/stall_inspector.h"
#include "timeline/plugin_hooks.h"

namespace hvd::runtime {

void Runtime::start_diagnostics() {
  timeline_hooks_ = std::make_unique<timeline::PluginHooks>(timeline_);
  // "DYNAMIC": no trace until hvd_start_timeline (which works either way).
  const std::string path = config_.get_string("timeline.path");
  if (rank_ == 0 && !path.empty() && path != "DYNAMIC") {
    try {
      timeline_.start(path, config_.get_bool("timeline.mark_cycles"), rank_);
    } catch (const Error& e) {
      throw Error(e.status(),
                  config_.source("timeline.path") + ": " + e.what());
    }
  }
  if (config_.get_bool("flight_recorder.enabled")) {
    const int64_t entries = config_.get_int("flight_recorder.entries");
    if (entries < 1 || entries > FlightRecorder::kMaxEntries) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  config_.source("flight_recorder.entries") +
                      ": flight_recorder.entries must be 1 to " +
                      std::to_string(FlightRecorder::kMaxEntries) + ", not " +
                      std::to_string(entries) +
                      " (flight_recorder.enabled = false turns it off)");
    }
    FlightRecorder::Options options;
    options.entries = static_cast<size_t>(entries);
    options.dir = FlightRecorder::log_dir(config_.get_string("log.dir"));
    options.rank = rank_;
    options.size = size_;
    flight_ = std::make_unique<FlightRecorder>(options);
  }
  if (rank_ == 0 && config_.get_bool("stall_check.enabled")) {
    stall_ = std::make_unique<StallInspector>(
        config_.get_duration("stall_check.warning_time"),
        config_.get_duration("stall_check.shutdown_time"));
  }
}

void Runtime::start_timeline(const std::string& path, bool mark_cycles) {
  if (path.empty()) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_start_timeline: empty path");
  }
  if (rank_ == 0) timeline_.start(path, mark_cycles, rank_);
}

void Runtime::stop_timeline() { timeline_.stop(); }

}  // namespace hvd::runtime
