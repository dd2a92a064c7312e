// One initialised runtime: what hvd_init builds and hvd_shutdown tears
// down. It owns the configuration, the bootstrap, the control plane, the
// reducers, the point-to-point engine and the background thread.
//
// The background thread runs cycles of runtime.cycle_time: it submits the
// ops that became ready here (ControlPlane::gather to world rank 0), the
// coordinator answers with responses (ControlPlane::broadcast), every rank
// executes them in that order, then it drives the data path until the next
// cycle, waking early for a new op when nothing else is pending (cycles
// that negotiate nothing come ever less often, up to 16 ms apart: see
// cycle_interval in runtime_progress.cc). A cycle in
// which every rank's ready ops are in the response cache skips the control
// plane: the ranks AND their cache bits over the data path instead
// (runtime_cache_sync.cc). A dead rank (the control plane's failure, or a
// transport's) fails every pending and later op with an error naming it.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "config/config.h"
#include "horovod/horovod.h"
#include "runtime/autotune.h"
#include "runtime/core_binding.h"
#include "runtime/messages.h"
#include "runtime/pending_op.h"
#include "runtime/progress_lock.h"
#include "timeline/timeline.h"

namespace hvd {
class Bootstrap;
class ControlPlane;
class PluginLoader;
struct PeerFailure;
class Error;
namespace p2p {
class AndAllreduce;
class Engine;
}  // namespace p2p
}  // namespace hvd

namespace hvd::timeline {
class PluginHooks;
}

namespace hvd::runtime {

class Executor;
class FlightRecorder;
class StallInspector;
class Autotuner;
class ReducerSet;
class ResponseCache;
struct ProcessSet;

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
  // `adjust`, when given, amends the op's request (process set changes).
  hvd_handle_s* enqueue(const hvd_op& op,
                        const std::function<void(Request&)>& adjust = {});
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
  // Any thread waiting for `handle`: runs the background thread's work in
  // its place, while no other thread runs it, until the handle finishes,
  // nothing has moved for `spin`, or `give_up` has come
  // (runtime_progress.cc). True when it finished.
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
  // runtime_diagnostics.cc: the timeline's marks and the stall inspector.
  void start_diagnostics();  // from the configuration
  void mark_cycle(const ResponseList& list);
  void mark_negotiated(const ProcessSet& set, const Response& response);
  // World rank 0: the stall inspector's verdict, into the list every rank
  // receives; every rank then logs its warning and, when the job must
  // stop, throws its failure.
  void inspect_stalls(ResponseList& out);
  void report_stalls(const ResponseList& list);
  // The flight recorder's dump, before `message`'s failure ends the ops.
  void record_failure(hvd_status status, const std::string& message);
  void note_submitted(const ProcessSet& set, int32_t set_rank,
                      const Request& request);
  // The ranks whose requests for a cached tensor (its bit) have come.
  void mark_arrivals(const ProcessSet& set, const std::string& name,
                     const std::vector<RequestList>& lists, uint32_t bit);
  // Every member's (a cache-bit round found the bit set on all of them).
  void mark_arrived(const ProcessSet& set, const std::string& name);
  void loop();
  // The cycle's steps take the progress lock's proof (progress_lock.h):
  // whoever holds it owns the state below under "the progress lock's".
  using Held = ProgressLock::Held;
  // runtime_rounds.cc. One round of negotiation, resumed where the last
  // holder of the progress lock left it: false when `until` came first (a
  // waiting caller's spin or timeout). A round by cache bits and one over
  // the control plane are the same kind of step: started, then tested
  // while the data path goes on, until done.
  bool cycle(const Held& progress,
             std::chrono::steady_clock::time_point until =
                 std::chrono::steady_clock::time_point::max());
  // The ops ready here, into requests_.
  void gather_requests(const Held& progress);
  // Tests the round begun until it is done (true) or `until` has come,
  // driving the data path meanwhile: another rank may need this one's part
  // of a task before it can join the round. Waiting longer than spin_time,
  // it calls the ranks that sleep outside the round to it.
  bool wait_round(const Held& progress,
                  std::chrono::steady_clock::time_point until);
  bool test_round(const Held& progress);
  // Sleeps for at most `most` on what can move the round: the data path,
  // the wake fd and, in a round over the control plane, its links.
  void sleep_in_round(std::chrono::nanoseconds most);
  // Over the control plane: gather to rank 0, which coordinates, then
  // broadcast; every rank runs the list.
  void start_control_round(const Held& progress);
  bool test_control_round(const Held& progress);
  void finish_control_round(const Held& progress);
  // runtime_cache_sync.cc: a round without the coordinator. Every rank
  // ANDs its cache bits with the others' (and ORs its reasons to negotiate)
  // in one small allreduce over the data path; when no rank has a reason,
  // all run the cached responses every member has ready, in the same
  // order. start: false where bits cannot be used this cycle; test: true
  // once every rank's bits are in; finish: false when some rank needs full
  // negotiation.
  bool start_bit_round(const Held& progress);
  bool test_bit_round(const Held& progress);
  bool finish_bit_round(const Held& progress);
  uint64_t reasons_to_negotiate() const;
  // Fused and planned data responses of cached entries ready on every
  // member, per process set (sets_ order), each set's in bit order.
  void cached_responses(std::vector<std::vector<Response>>& ready,
                        ResponseList& out);
  // Every rank's part once the cycle's response list is known.
  void run_responses(const Held& progress, ResponseList& list);
  [[noreturn]] void data_path_failed(const Held& progress, const Error& e);
  // runtime_progress.cc: a driving caller's step, and the loop.
  // A loaded transport or reducer that takes calls from the background
  // thread only (abi_minors.h), or "".
  std::string background_thread_only_plugin() const;
  // What a driving caller's step threw, for the background thread (taking
  // the lock back) to fail everything with.
  void rethrow_caller_error(const Held& progress);
  // One step of a waiting caller's driving, within `until`; true when
  // something moved.
  bool caller_step(const Held& progress,
                   std::chrono::steady_clock::time_point until);
  // Lets go of the lock while it spins or sleeps.
  void wait_for_next_cycle(Held& progress);
  // When the ops coming in have stopped coming, or have waited long
  // enough: the background thread negotiates them then, not one by one.
  std::chrono::steady_clock::time_point batch_end() const;
  // cycle_time, longer while rounds negotiate nothing (runtime_progress.cc).
  std::chrono::nanoseconds cycle_interval() const;
  void throw_if_peer_failed();
  // Executor progress; reports fatal data-path errors.
  bool drive(const Held& progress);
  void await_verdict();  // waits a moment for the control plane's failure
  void drain(const Held& progress);
  bool input_ready(PendingOp* op);
  void coordinate(const Held& progress,
                  const std::vector<std::vector<uint8_t>>& gathered,
                  ResponseList& out);
  void offer_cached(const Held& progress);
  void coordinate_cached(const Held& progress,
                         const std::vector<RequestList>& lists,
                         ResponseList& out);
  void apply_cache(const Held& progress, ResponseList& list);
  // A set change negotiated on set 0, at its place in the response list.
  void apply_set_change(const Held& progress, const Response& response);
  // Names and enqueues a set change on set 0 (`invalid`: why it must fail).
  hvd_handle_s* start_set_change(SetChange change, std::vector<int64_t> payload,
                                 const std::string& invalid);
  void fail_set_ops(ProcessSet* set, const std::string& message);
  void mark_queued(ProcessSet& set, const Response& response);
  // Ops submitted here wait in negotiation for other ranks.
  bool awaiting_others() const;
  // Autotune (world rank 0): scores the cycle's responses; when the
  // autotuner moves on, the new setting goes in `out` if `announce` (a
  // list over the control plane), else it waits for the next such list
  // (a cache-bit round: kTuned then brings the control plane back).
  void start_autotune();
  void tune(ResponseList& out, bool announce);
  void apply_tuning(const ResponseList& list);
  void plan(Response& response, const ProcessSet& set);
  ProcessSet* find_set(int32_t id) const;
  void complete(PendingOp* op, hvd_status status, const std::string& message);
  void fail_everything(const Held& progress, hvd_status status,
                       const std::string& message);
  bool has_ops_in_flight() {
    std::lock_guard<std::mutex> lock(mutex_);
    return !in_flight_.empty();
  }
  void note_failure(const PeerFailure& failure);
  void wake();
  void drain_wake_fd();
  void teardown();
  static std::string key_of(const PendingOp& op);

  int32_t rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1,
          cross_rank_ = 0, cross_size_ = 1;
  bool homogeneous_ = true;
  uint64_t fusion_threshold_ = 0;
  std::chrono::nanoseconds cycle_time_{};
  std::chrono::nanoseconds spin_time_{};

  // Declared in build order; torn down in reverse. The timeline outlives
  // the plugins that hold its hooks.
  timeline::Timeline timeline_;
  std::unique_ptr<timeline::PluginHooks> timeline_hooks_;
  std::unique_ptr<StallInspector> stall_;  // world rank 0, when enabled
  std::unique_ptr<FlightRecorder> flight_;  // when enabled
  Config config_;
  std::unique_ptr<Bootstrap> bootstrap_;
  std::unique_ptr<ControlPlane> control_;
  std::unique_ptr<PluginLoader> loader_;
  std::unique_ptr<ReducerSet> reducers_;
  std::unique_ptr<p2p::Engine> engine_;
  std::vector<std::unique_ptr<ProcessSet>> sets_;  // written under mutex_
  // Removed sets the executor may still hold responses of.
  std::vector<std::unique_ptr<ProcessSet>> retired_sets_;
  int32_t next_set_id_ = 1;
  bool dynamic_sets_ = false;
  std::mutex set_change_mutex_;  // names and enqueues one change at a time
  uint64_t set_changes_ = 0;     // names them
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<ResponseCache> cache_;
  // The cache bit exchange over set 0's team; outlives the engine, whose
  // transports may still hold its buffers after a failure.
  std::unique_ptr<p2p::AndAllreduce> cache_sync_;
  std::vector<uint64_t> sync_words_;
  // With the stall inspector on, an op waiting this long here brings the
  // coordinator back, so the inspector sees it.
  std::chrono::nanoseconds stall_fallback_{};
  bool stall_check_ = false;
  uint64_t control_rounds_ = 0, bit_rounds_ = 0;  // cycles of each kind
  // Rounds in a row that negotiated nothing while the data path was idle.
  uint64_t idle_rounds_ = 0;
  // No response above kQuietBytes has run since a round over the control
  // plane found every rank's data path idle: cache bits would not wait
  // behind a large transfer on any connection. The same on every rank.
  static constexpr uint64_t kQuietBytes = 64 << 10;
  bool data_path_quiet_ = true;
  std::unique_ptr<Autotuner> autotuner_;       // world rank 0, when on
  std::optional<TuneSetting> pending_tuning_;  // not yet announced
  std::string preferred_reducer_;              // the autotuner's, on every rank
  int wake_fd_ = -1;
  std::thread thread_;
  CoreBinding core_binding_;  // the initialising thread's, when bound

  // Shared with the callers' threads.
  std::mutex mutex_;
  std::vector<PendingOp*> submitted_;
  std::unordered_set<std::string> in_flight_;  // key_of() of every live op
  bool stopped_ = false;
  hvd_status stop_status_ = HVD_ERR_SHUT_DOWN;
  std::string stop_message_;
  std::atomic<bool> shutdown_requested_{false};
  std::atomic<bool> has_new_{false};
  // When the first op since has_new_ was last taken, and the latest op,
  // were enqueued (steady clock, ns): a stream of them is negotiated as one
  // batch (runtime_progress.cc).
  std::atomic<int64_t> first_new_ns_{0}, last_new_ns_{0};
  // The background thread sleeps where a new op should wake it (else
  // enqueue need not write the wake fd: it looks at has_new_ while it
  // spins).
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> wake_written_{false};  // the wake fd may be readable
  // A peer called this rank to a round (ControlPlane::on_round_called).
  std::atomic<bool> round_called_{false};
  std::atomic<bool> failed_{false};
  ProgressLock progress_;
  // Every transport and reducer may be called from a waiting thread (ABI
  // 1.4); set once at init.
  bool callers_may_drive_ = false;
  // When a driving caller last moved something (steady clock, ns): the
  // background thread spins on from there rather than sleep.
  std::atomic<int64_t> caller_moved_ns_{0};
  std::atomic<int> callers_driving_{0};  // threads in drive_until_done
  std::mutex failure_mutex_;
  std::string failure_message_;
  int32_t failure_rank_ = -1;

  // The progress lock's: its holder's, the background thread's or a
  // driving caller's.
  // A round begun and not finished: by cache bits, or over the control
  // plane in its gather or its broadcast.
  enum class Round { kNone, kBits, kGather, kBroadcast };
  Round round_ = Round::kNone;
  // Rounds begun (the same count on every rank: rounds are collective),
  // and whether this one has called the neighbours in the control plane's
  // tree to it (ControlPlane::summon) once it waited spin_time, or needs
  // not: only a round that carries something new (requests, cache bits, a
  // shutdown) calls them. A rank that waits for a late peer's op gains
  // nothing by calling that peer's idle thread to round after round; its
  // rounds go at the peer's idle pace (cycle_interval) and it sleeps.
  uint64_t rounds_begun_ = 0;
  std::chrono::steady_clock::time_point round_began_;
  bool summoned_ = false;
  bool progress_closed_ = false;     // the loop has ended: no caller drives
  std::exception_ptr caller_error_;  // a caller's step threw it
  std::vector<PendingOp*> incoming_;
  std::vector<PendingOp*> waiting_;  // submitted here, inputs not ready yet
  std::vector<PendingOp*> cached_waiting_;  // kAwaitingCacheBits
  RequestList requests_;
  std::vector<uint8_t> request_bytes_, response_bytes_;
  std::vector<std::vector<uint8_t>> gathered_;  // rank 0's, in a round
  std::vector<int> round_fds_;                  // what sleep_in_round polls
  std::vector<size_t> candidates_;
  // A cache-bit round's ready bits per process set and its responses,
  // kept from round to round (their storage is reused).
  std::vector<std::vector<uint32_t>> ready_bits_;
  ResponseList bit_list_;
  int32_t transport_fault_peer_ = -1;  // the first peer a transport blamed
  std::string transport_fault_;
  std::chrono::nanoseconds verdict_wait_{std::chrono::seconds(1)};
  int64_t cycle_start_ns_ = 0;  // for the timeline's cycle marks
  std::chrono::steady_clock::time_point last_cycle_;  // its start
  bool shutdown_seen_ = false;
  int32_t shutdown_rank_ = -1;
  // Another rank's shutdown refused an op here, and the log said so.
  bool early_shutdown_logged_ = false;  // mutex_
};

}  // namespace hvd::runtime
