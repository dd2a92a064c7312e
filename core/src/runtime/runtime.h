// One initialised runtime: what hvd_init builds and hvd_shutdown tears
// down, and the C API's entry points. It owns the configuration, the
// bootstrap, the control plane, the reducers, the point-to-point engine,
// the executor and the diagnostics, and the parts that run the job over
// them, each with one job:
//
//   Driver       who runs the cycle and when: the background thread's
//                loop, a waiting caller driving its own op, sleeping
//   Cycle        gather the ops ready here, one round (by cache bits or
//                over the control plane), apply the responses
//   Failure      note a failure, agree the verdict, fail everything once
//   OpIntake     enqueue and complete ops, refuse them once stopped
//   ProcessSets  the registry of process sets and the ops they hold
//   Wakeup       the background thread's wake-up
//
// Each calls only the parts listed below it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "horovod/horovod.h"
#include "runtime/core_binding.h"
#include "runtime/messages.h"
#include "runtime/wakeup.h"
#include "timeline/timeline.h"

namespace hvd {
class Bootstrap;
class ControlPlane;
class PluginLoader;
namespace p2p {
class Engine;
}
}  // namespace hvd

namespace hvd::timeline {
class PluginHooks;
}

namespace hvd::runtime {

class Cycle;
class Driver;
class Executor;
class Failure;
class FlightRecorder;
class OpIntake;
class ProcessSets;
class ReducerSet;
class StallInspector;

class Runtime {
 public:
  // Collective over the job. Throws hvd::Error on any failure, naming it.
  explicit Runtime(const hvd_init_options* options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  int32_t local_rank() const { return local_rank_; }
  int32_t local_size() const { return local_size_; }
  int32_t cross_rank() const { return cross_rank_; }
  int32_t cross_size() const { return cross_size_; }
  // Whether every host runs the same number of ranks.
  bool is_homogeneous() const { return homogeneous_; }

  // Any thread. Throws hvd::Error for an invalid op (naming it and what is
  // wrong), a duplicate name in flight, or a runtime that has stopped.
  hvd_handle_s* enqueue(const hvd_op& op);
  // Collective over the world ([runtime] dynamic_process_sets): start the
  // change and return its handle, which finishes with the set's id as
  // output 0 (runtime_sets.cc); removing fails the set's ops still in
  // negotiation. Throw hvd::Error (HVD_ERR_UNSUPPORTED when dynamic sets
  // are off); invalid arguments fail the change on every rank.
  hvd_handle_s* start_add_process_set(const std::vector<int32_t>& ranks);
  hvd_handle_s* start_remove_process_set(int32_t id);
  // Any thread. This process's rank in process set `id` (-1 when not a
  // member) and the set's size; false when no set has that id.
  bool process_set_layout(int32_t id, int32_t* rank, int32_t* size);
  // Negotiates the end with the other ranks, fails what is pending with
  // HVD_ERR_SHUT_DOWN, joins the background thread and tears down.
  void shutdown();
  // Any thread waiting for `handle` (Driver::drive_until_done).
  bool drive_until_done(hvd_handle_s* handle, std::chrono::nanoseconds spin,
                        std::chrono::steady_clock::time_point give_up);
  // The background thread, or a thread driving in its place: where
  // completion callbacks run.
  bool on_progress_thread() const;
  // Any thread. Rank 0 writes the trace (as Horovod's); on other ranks
  // these do nothing. start throws hvd::Error when the file cannot be
  // opened.
  void start_timeline(const std::string& path, bool mark_cycles);
  void stop_timeline();

 private:
  void start(const hvd_init_options* options);  // the constructor's work
  void check_config_digest();
  void check_same_process_sets(const hvd_init_options* options);
  void add_initial_sets(const hvd_init_options* options);
  // runtime_diagnostics.cc: from the configuration.
  void start_diagnostics();
  // A loaded transport or reducer that takes calls from the background
  // thread only (abi_minors.h), or "".
  std::string background_thread_only_plugin() const;
  // runtime_sets.cc. Names and enqueues a set change on set 0 (`invalid`:
  // why it must fail).
  hvd_handle_s* start_set_change(SetChange change, std::vector<int64_t> payload,
                                 const std::string& invalid);
  void teardown();

  int32_t rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1,
          cross_rank_ = 0, cross_size_ = 1;
  bool homogeneous_ = true;
  bool dynamic_sets_ = false;
  std::mutex set_change_mutex_;  // names and enqueues one change at a time
  uint64_t set_changes_ = 0;     // names them

  // Declared in build order; torn down in reverse. The timeline outlives
  // the plugins that hold its hooks.
  timeline::Timeline timeline_;
  std::unique_ptr<timeline::PluginHooks> timeline_hooks_;
  std::unique_ptr<StallInspector> stall_;  // world rank 0, when enabled
  std::unique_ptr<FlightRecorder> flight_;  // when enabled
  Config config_;
  Wakeup wakeup_;
  std::unique_ptr<Failure> failure_;
  std::unique_ptr<Bootstrap> bootstrap_;
  std::unique_ptr<ControlPlane> control_;
  std::unique_ptr<PluginLoader> loader_;
  std::unique_ptr<ReducerSet> reducers_;
  std::unique_ptr<p2p::Engine> engine_;
  std::unique_ptr<ProcessSets> sets_;
  std::unique_ptr<OpIntake> intake_;
  std::unique_ptr<Executor> executor_;
  // Outlives the engine: its cache-bit exchange's buffers may still be
  // held by the transports after a failure.
  std::unique_ptr<Cycle> cycle_;
  std::unique_ptr<Driver> driver_;
  CoreBinding core_binding_;  // the initialising thread's, when bound
};

}  // namespace hvd::runtime
