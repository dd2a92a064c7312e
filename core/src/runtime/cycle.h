// The cycle: one negotiation of the ops ready here with every other rank,
// then its responses applied. A cycle gathers this rank's ready ops into
// requests, runs one round (by cache bits over the data path when every
// rank's ops are in the response cache, else over the control plane: a
// gather to world rank 0, which coordinates, and a broadcast back), and
// applies the response list every rank receives in the same order: the
// cache's changes, process set changes, and data responses pushed to the
// executor.
//
// A round is one resumable step: begun by whoever holds the progress lock,
// tested (never waited on) while the data path goes on, and carried on by
// the next holder where the last one left it. Every method that touches
// the cycle's state takes the lock's proof (progress_lock.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "horovod/horovod.h"
#include "runtime/autotune.h"
#include "runtime/messages.h"
#include "runtime/pending_op.h"
#include "runtime/progress_lock.h"
#include "timeline/timeline.h"

namespace hvd {
class Config;
class ControlPlane;
class Error;
namespace p2p {
class AndAllreduce;
class Engine;
}  // namespace p2p
}  // namespace hvd

namespace hvd::runtime {

class Autotuner;
class Executor;
class Failure;
class FlightRecorder;
class OpIntake;
class ProcessSets;
class ReducerSet;
class ResponseCache;
class StallInspector;
class Wakeup;
struct ProcessSet;

class Cycle {
 public:
  using Held = ProgressLock::Held;
  struct Parts {
    int32_t rank;
    ControlPlane& control;
    p2p::Engine& engine;
    ReducerSet& reducers;
    Executor& executor;
    ProcessSets& sets;
    OpIntake& intake;
    Failure& failure;
    Wakeup& wakeup;
    timeline::Timeline& timeline;
    StallInspector* stall;   // world rank 0, when enabled
    FlightRecorder* flight;  // when enabled
  };
  Cycle(const Config& config, const Parts& parts);
  ~Cycle();

  // One cycle, resumed where the last holder of the progress lock left
  // its round: false when `until` came first (a waiting caller's spin or
  // timeout).
  bool run(const Held& progress,
           std::chrono::steady_clock::time_point until =
               std::chrono::steady_clock::time_point::max());
  // Executor progress (true when something moved); a data-path error
  // ends in the failure's verdict.
  bool drive(const Held& progress);
  // Drives the data path until the executor is idle.
  void drain(const Held& progress);

  // A round is begun and not finished.
  bool round_open(const Held&) const { return round_ != Round::kNone; }
  // Rounds begun: the same count on every rank (rounds are collective).
  uint64_t rounds_begun(const Held&) const { return rounds_begun_; }
  // When the latest cycle began.
  std::chrono::steady_clock::time_point last_began(const Held&) const {
    return last_cycle_;
  }
  // The time between cycles, longer while rounds negotiate nothing and
  // the data path is idle.
  std::chrono::nanoseconds interval(const Held& progress) const;
  // Rounds have come back empty long enough to slow the cycle down.
  bool slowed(const Held& progress) const;
  std::chrono::nanoseconds cycle_time(const Held&) const { return cycle_time_; }

  // Any thread: this rank's hvd_shutdown, negotiated by the next round.
  void request_shutdown() { shutdown_requested_ = true; }
  bool shutdown_requested() const { return shutdown_requested_; }
  // A round's responses carried some rank's shutdown.
  bool shutdown_seen(const Held&) const { return shutdown_seen_; }
  int32_t shutdown_rank(const Held&) const { return shutdown_rank_; }
  // The cache's and the rounds' figures, for the log at the end.
  void log_summary(const Held& progress) const;

 private:
  // cycle.cc: the ops ready here, into requests_; the responses applied.
  void gather_requests(const Held& progress);
  bool input_ready(PendingOp* op);
  void run_responses(const Held& progress, ResponseList& list);
  // Ends an op here (OpIntake::complete, blaming the transport's peer).
  void finish(PendingOp* op, hvd_status status, const std::string& message);

  // cycle_rounds.cc. Tests the round begun until it is done (true) or
  // `until` has come, driving the data path meanwhile: another rank may
  // need this one's part of a task before it can join the round. Waiting
  // longer than spin_time, it calls the ranks that sleep outside the round
  // to it (summon_due).
  bool wait_round(const Held& progress,
                  std::chrono::steady_clock::time_point until);
  bool summon_due(std::chrono::steady_clock::time_point now) const;
  bool test_round(const Held& progress);
  // Sleeps for at most `most` on what can move the round: the data path,
  // the wake fd and, in a round over the control plane, its links. Until
  // the round has called its neighbours, a new op wakes it.
  void sleep_in_round(std::chrono::nanoseconds most);
  // Over the control plane: gather to rank 0, which coordinates, then
  // broadcast; every rank runs the list.
  void start_control_round(const Held& progress);
  bool test_control_round(const Held& progress);
  void finish_control_round(const Held& progress);
  void coordinate(const Held& progress,
                  const std::vector<std::vector<uint8_t>>& gathered,
                  ResponseList& out);

  // cycle_cache_bits.cc: a round without the coordinator. Every rank ANDs
  // its cache bits with the others' (and ORs its reasons to negotiate) in
  // one small allreduce over the data path; when no rank has a reason,
  // all run the cached responses every member has ready, in the same
  // order. start: false where cache bits cannot be used this cycle; test:
  // true once every rank's bits are in; finish: false when some rank needs
  // the control plane.
  bool start_cache_bits_round(const Held& progress);
  bool test_cache_bits_round(const Held& progress);
  bool finish_cache_bits_round(const Held& progress);
  uint64_t reasons_to_negotiate() const;

  // cycle_cache.cc: the response cache's part (response_cache.h).
  void offer_cached(const Held& progress);
  void coordinate_cached(const Held& progress,
                         const std::vector<RequestList>& lists,
                         ResponseList& out);
  // Fused responses of cached entries ready on every member, per process
  // set (ProcessSets::all() order), each set's in bit order, with their
  // reducers chosen.
  void cached_responses(std::vector<std::vector<Response>>& ready,
                        ResponseList& out);
  void apply_cache(const Held& progress, ResponseList& list);
  // The reducer a data response runs with on every rank.
  void choose_reducer(Response& response, const ProcessSet& set);

  // cycle_set_changes.cc: a set change negotiated on set 0, at its place
  // in the response list.
  void apply_set_change(const Held& progress, const Response& response);
  void fail_set_ops(ProcessSet* set, const std::string& message);
  void mark_queued(ProcessSet& set, const Response& response);

  // cycle_marks.cc: the timeline's marks and the stall inspector.
  void mark_cycle(const ResponseList& list);
  void mark_negotiated(const ProcessSet& set, const Response& response);
  // The ranks whose requests for a cached tensor (its bit) have come.
  void mark_arrivals(const ProcessSet& set, const std::string& name,
                     const std::vector<RequestList>& lists, uint32_t bit);
  // Every member's (a cache-bit round found the bit set on all of them).
  void mark_arrived(const ProcessSet& set, const std::string& name);
  void note_submitted(const ProcessSet& set, int32_t set_rank,
                      const Request& request);
  // World rank 0: the stall inspector's verdict, into the list every rank
  // receives; every rank then logs its warning and, when the job must
  // stop, throws its failure.
  void inspect_stalls(ResponseList& out);
  void report_stalls(const ResponseList& list);

  // cycle_tuning.cc. Autotune (world rank 0): scores the cycle's
  // responses; when the autotuner moves on, the new setting goes in `out`
  // if `announce` (a list over the control plane), else it waits for the
  // next such list (a cache-bit round: kTuned then brings the control
  // plane back).
  void start_autotune(const Config& config);
  void tune(ResponseList& out, bool announce);
  void apply_tuning(const ResponseList& list);

  const int32_t rank_;
  ControlPlane& control_;
  p2p::Engine& engine_;
  ReducerSet& reducers_;
  Executor& executor_;
  ProcessSets& sets_;
  OpIntake& intake_;
  Failure& failure_;
  Wakeup& wakeup_;
  timeline::Timeline& timeline_;
  StallInspector* const stall_;
  FlightRecorder* const flight_;

  uint64_t fusion_threshold_ = 0;
  std::chrono::nanoseconds cycle_time_{};
  const std::chrono::nanoseconds spin_time_;
  std::unique_ptr<ResponseCache> cache_;
  // The cache bit exchange over set 0's team; outlives the engine, whose
  // transports may still hold its buffers after a failure.
  std::unique_ptr<p2p::AndAllreduce> cache_sync_;
  std::vector<uint64_t> sync_words_;
  bool stall_check_ = false;
  // With the stall inspector on, an op waiting this long here brings the
  // coordinator back, so the inspector sees it.
  std::chrono::nanoseconds stall_fallback_{};
  std::unique_ptr<Autotuner> autotuner_;       // world rank 0, when on
  std::optional<TuneSetting> pending_tuning_;  // not yet announced
  std::string preferred_reducer_;              // the autotuner's, on every rank
  std::atomic<bool> shutdown_requested_{false};

  uint64_t control_rounds_ = 0, cache_bits_rounds_ = 0;  // of each kind
  // Rounds in a row that negotiated nothing while the data path was idle.
  uint64_t idle_rounds_ = 0;
  // No response above kQuietBytes has run since a round over the control
  // plane found every rank's data path idle: cache bits would not wait
  // behind a large transfer on any connection. The same on every rank.
  static constexpr uint64_t kQuietBytes = 64 << 10;
  bool data_path_quiet_ = true;
  // A round begun and not finished: by cache bits, or over the control
  // plane in its gather or its broadcast.
  enum class Round { kNone, kCacheBits, kGather, kBroadcast };
  Round round_ = Round::kNone;
  // Rounds begun, and whether this one has called the neighbours in the
  // control plane's tree to it (ControlPlane::summon). A round calls them
  // once it has waited spin_time, when it carries something new (requests,
  // cache bits, a shutdown: news) or ops came here since it began: the
  // ranks that sleep outside it would come only at their deadlines, and
  // the new ops with them. A rank that waits for a late peer's op gains
  // nothing by calling that peer's idle thread to round after round; its
  // rounds go at the peer's idle pace (interval) and it sleeps. A round
  // that called and still waits calls again now and then (kCallAgain).
  uint64_t rounds_begun_ = 0;
  std::chrono::steady_clock::time_point round_began_;
  bool round_news_ = false;
  bool summoned_ = false;
  std::chrono::steady_clock::time_point last_summon_;
  std::vector<PendingOp*> incoming_;  // not owned (op_table.h)
  RequestList requests_;
  std::vector<uint8_t> request_bytes_, response_bytes_;
  std::vector<std::vector<uint8_t>> gathered_;  // rank 0's, in a round
  std::vector<int> round_fds_;                  // what sleep_in_round polls
  std::vector<size_t> candidates_;
  // A cache-bit round's ready bits per process set and its responses,
  // kept from round to round (their storage is reused).
  std::vector<std::vector<uint32_t>> ready_bits_;
  ResponseList bit_list_;
  int64_t cycle_start_ns_ = 0;  // for the timeline's cycle marks
  std::chrono::steady_clock::time_point last_cycle_;  // its start
  bool shutdown_seen_ = false;
  int32_t shutdown_rank_ = -1;
};

}  // namespace hvd::runtime
