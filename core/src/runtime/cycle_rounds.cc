// A round of negotiation as one resumable step (cycle.h). A round by
// cache bits (cycle_cache_bits.cc) falls back to one over the control
// plane when some rank needs the coordinator; either kind is a task like
// a transport's, started and then tested.
#include <algorithm>

#include "common/error.h"
#include "control/control_plane.h"
#include "p2p/engine.h"
#include "runtime/coordinator.h"
#include "runtime/cycle.h"
#include "runtime/executor.h"
#include "runtime/failure.h"
#include "runtime/flight_recorder.h"
#include "runtime/fusion.h"
#include "runtime/op_intake.h"
#include "runtime/process_sets.h"
#include "runtime/stall_inspector.h"
#include "runtime/wakeup.h"
#include "timeline/timeline.h"

namespace hvd::runtime {
namespace {

// The longest a round sleeps between looks while it waits for slower
// ranks (a failure, a new op or a control frame wakes it at once), and
// while its frames wait for a socket to take them.
constexpr auto kRoundSleep = std::chrono::milliseconds(100);
constexpr auto kSendingNap = std::chrono::microseconds(100);
// A round that called its neighbours and still waits calls them again this
// often: a call that found a neighbour between two looks at its links is
// not lost for good, and a neighbour already in the round ignores it.
constexpr auto kCallAgain = kRoundSleep;

}  // namespace

bool Cycle::wait_round(const Held& progress,
                       std::chrono::steady_clock::time_point until) {
  while (true) {
    if (test_round(progress)) return true;
    bool moved = drive(progress);
    failure_.throw_if_failed();
    const auto now = std::chrono::steady_clock::now();
    // A round may wait long for a late rank: ops that finish meanwhile get
    // their own time.
    if (flight_) flight_->tick(now);
    if (now >= until) return false;
    if (summon_due(now)) {
      summoned_ = true;
      last_summon_ = now;
      control_.summon(rounds_begun_);
    }
    if (!moved) {
      sleep_in_round(
          std::min<std::chrono::nanoseconds>(kRoundSleep, until - now));
    }
  }
}

bool Cycle::summon_due(std::chrono::steady_clock::time_point now) const {
  if (now - round_began_ < spin_time_) return false;
  if (summoned_ && now - last_summon_ < kCallAgain) return false;
  // An empty round (begun at this rank's cycle time) that new ops find
  // open: they go in the next round, which begins only when this one ends.
  return round_news_ || intake_.new_since(round_began_);
}

bool Cycle::test_round(const Held& progress) {
  return round_ == Round::kCacheBits ? test_cache_bits_round(progress)
                                     : test_control_round(progress);
}

void Cycle::sleep_in_round(std::chrono::nanoseconds most) {
  round_fds_.clear();
  round_fds_.push_back(wakeup_.fd());
  if (round_ != Round::kCacheBits) {
    control_.wait_fds(round_fds_);
    if (control_.sending()) {
      most = std::min<std::chrono::nanoseconds>(most, kSendingNap);
    }
  }
  // Sleeping first: an op enqueued after the look below writes the fd.
  // The flag is put back as it was: the background thread may sleep on
  // it while a waiting caller runs the round.
  const bool others_sleep = wakeup_.sleeping();
  wakeup_.set_sleeping(others_sleep || !summoned_);
  if (summoned_ || !intake_.new_since(round_began_)) {
    engine_.wait(most, round_fds_);
  }
  wakeup_.set_sleeping(others_sleep);
  wakeup_.drain();
}

void Cycle::start_control_round(const Held&) {
  ++control_rounds_;
  requests_.busy = !executor_.idle();
  encode(requests_, request_bytes_);
  control_.start_gather(request_bytes_);
  round_ = Round::kGather;
}

bool Cycle::test_control_round(const Held& progress) {
  if (round_ == Round::kGather) {
    if (!control_.test_gather(&gathered_)) return false;
    if (rank_ == 0) {
      ResponseList list;
      coordinate(progress, gathered_, list);
      if (autotuner_) tune(list, true);
      if (stall_) inspect_stalls(list);
      encode(list, response_bytes_);
    }
    control_.start_broadcast(response_bytes_);
    round_ = Round::kBroadcast;
  }
  return control_.test_broadcast(&response_bytes_);
}

void Cycle::finish_control_round(const Held& progress) {
  round_ = Round::kNone;
  ResponseList list = decode_responses(response_bytes_);
  report_stalls(list);
  data_path_quiet_ = !list.busy;
  run_responses(progress, list);
}

void Cycle::coordinate(const Held& progress,
                       const std::vector<std::vector<uint8_t>>& gathered,
                       ResponseList& out) {
  std::vector<RequestList> lists(gathered.size());
  for (int32_t r = 0; r < static_cast<int32_t>(gathered.size()); ++r) {
    lists[r] = decode_requests(gathered[r]);
  }
  coordinate_cached(progress, lists, out);
  for (int32_t r = 0; r < static_cast<int32_t>(gathered.size()); ++r) {
    RequestList& list = lists[r];
    out.busy = out.busy || list.busy;
    if (list.shutdown && !out.shutdown) {
      out.shutdown = true;
      out.shutdown_rank = r;
    }
    for (Request& q : list.requests) {
      ProcessSet* set = sets_.find(q.process_set);
      if (!set || set->rank_of_world[r] < 0) {
        throw Error(HVD_ERR_INTERNAL,
                    "rank " + std::to_string(r) + " submitted '" + q.name +
                        "' to process set " + std::to_string(q.process_set) +
                        ", which it is not a member of");
      }
      if (timeline_.on()) timeline_.arrived(timeline_.intern(q.name), r);
      if (stall_) note_submitted(*set, set->rank_of_world[r], q);
      set->coordinator->submit(set->rank_of_world[r], std::move(q));
    }
  }
  for (const auto& set : sets_.all()) {
    std::vector<Response> ready = set->coordinator->take_ready();
    if (ready.empty()) continue;
    if (stall_) {
      for (const Response& r : ready) {
        if (r.kind == ResponseKind::kJoin) stall_->joins_resolved(set->id);
        for (const Entry& e : r.entries) stall_->resolved(set->id, e.name);
      }
    }
    for (Response& r : fuse(std::move(ready), fusion_threshold_, set->size())) {
      choose_reducer(r, *set);
      out.responses.push_back(std::move(r));
    }
  }
}

}  // namespace hvd::runtime
