// A round of negotiation as one resumable step: begun by whoever holds the
// progress lock, tested (never waited on) while the data path goes on, and
// carried on by the next holder where the last one left it. A round by
// cache bits (runtime_cache_sync.cc) falls back to one over the control
// plane when some rank needs the coordinator; either kind is a task like
// a transport's, started and then tested.
#include <algorithm>

#include "common/error.h"
#include "control/control_plane.h"
#include "p2p/engine.h"
#include "runtime/executor.h"
#include "runtime/flight_recorder.h"
#include "runtime/runtime.h"

namespace hvd::runtime {
namespace {

// The longest a round sleeps between looks while it waits for slower
// ranks (a failure, a new op or a control frame wakes it at once), and
// while its frames wait for a socket to take them.
constexpr auto kRoundSleep = std::chrono::milliseconds(100);
constexpr auto kSendingNap = std::chrono::microseconds(100);

}  // namespace

bool Runtime::cycle(const Held& progress,
                    std::chrono::steady_clock::time_point until) {
  if (round_ == Round::kNone) {
    ++rounds_begun_;
    round_began_ = std::chrono::steady_clock::now();
    gather_requests(progress);
    summoned_ = requests_.requests.empty() && requests_.cache_hits.empty() &&
                requests_.cache_stale.empty() && !requests_.shutdown;
    if (start_bit_round(progress)) {
      round_ = Round::kBits;
    } else {
      start_control_round(progress);
    }
  }
  while (true) {
    if (!wait_round(progress, until)) return false;
    if (round_ != Round::kBits) break;
    if (finish_bit_round(progress)) {
      round_ = Round::kNone;
      return true;
    }
    start_control_round(progress);
  }
  finish_control_round(progress);
  return true;
}

bool Runtime::wait_round(const Held& progress,
                         std::chrono::steady_clock::time_point until) {
  while (true) {
    if (test_round(progress)) return true;
    bool moved = drive(progress);
    throw_if_peer_failed();
    const auto now = std::chrono::steady_clock::now();
    // A round may wait long for a late rank: ops that finish meanwhile get
    // their own time.
    if (flight_) flight_->tick(now);
    if (now >= until) return false;
    if (!summoned_ && now - round_began_ >= spin_time_) {
      summoned_ = true;
      control_->summon(rounds_begun_);
    }
    if (!moved) {
      sleep_in_round(
          std::min<std::chrono::nanoseconds>(kRoundSleep, until - now));
    }
  }
}

bool Runtime::test_round(const Held& progress) {
  return round_ == Round::kBits ? test_bit_round(progress)
                                : test_control_round(progress);
}

void Runtime::sleep_in_round(std::chrono::nanoseconds most) {
  round_fds_.clear();
  round_fds_.push_back(wake_fd_);
  if (round_ != Round::kBits) {
    control_->wait_fds(round_fds_);
    if (control_->sending()) {
      most = std::min<std::chrono::nanoseconds>(most, kSendingNap);
    }
  }
  engine_->wait(most, round_fds_);
  drain_wake_fd();
}

void Runtime::start_control_round(const Held&) {
  ++control_rounds_;
  requests_.busy = !executor_->idle();
  encode(requests_, request_bytes_);
  control_->start_gather(request_bytes_);
  round_ = Round::kGather;
}

bool Runtime::test_control_round(const Held& progress) {
  if (round_ == Round::kGather) {
    if (!control_->test_gather(&gathered_)) return false;
    if (rank_ == 0) {
      ResponseList list;
      coordinate(progress, gathered_, list);
      if (autotuner_) tune(list, true);
      if (stall_) inspect_stalls(list);
      encode(list, response_bytes_);
    }
    control_->start_broadcast(response_bytes_);
    round_ = Round::kBroadcast;
  }
  return control_->test_broadcast(&response_bytes_);
}

void Runtime::finish_control_round(const Held& progress) {
  round_ = Round::kNone;
  ResponseList list = decode_responses(response_bytes_);
  report_stalls(list);
  data_path_quiet_ = !list.busy;
  run_responses(progress, list);
}

}  // namespace hvd::runtime
