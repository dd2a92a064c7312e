// A failure of the job, from its first sign to every op failed: the
// control plane's verdict (a rank died or reported itself failed), what a
// transport saw meanwhile, the wait for the verdict a broken connection
// needs (it may be a cascade of another rank's death), and the end: every
// op pending here and every later one fails with one message, once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "horovod/horovod.h"
#include "runtime/progress_lock.h"

namespace hvd {
class ControlPlane;
class Error;
struct PeerFailure;
namespace p2p {
class Engine;
}
}  // namespace hvd

namespace hvd::runtime {

class Executor;
class FlightRecorder;
class OpIntake;
class ProcessSets;
class Wakeup;

class Failure {
 public:
  Failure(int32_t rank, Wakeup& wakeup);
  // What failing everything needs, once the runtime has built it.
  struct Parts {
    ControlPlane& control;
    p2p::Engine& engine;
    Executor& executor;
    ProcessSets& sets;
    OpIntake& intake;
    FlightRecorder* flight;
    // How long a broken connection waits for the control plane's verdict.
    std::chrono::nanoseconds verdict_wait;
  };
  void attach(const Parts& parts);

  // Any thread (the control plane's): the first failure is the verdict.
  void note(const PeerFailure& failure);
  // The first peer a transport blamed, and why.
  void note_transport_fault(int32_t peer, const std::string& reason);
  int32_t transport_fault_peer() const { return transport_fault_peer_; }
  bool failed() const { return failed_; }
  // Throws the verdict as hvd::Error HVD_ERR_PEER_FAILED, if there is one.
  void throw_if_failed() const;
  // A data-path error: this rank's own is reported to every rank; a peer's
  // waits for the control plane to name the rank really at fault. Throws
  // the verdict, else `e`.
  [[noreturn]] void data_path_failed(const Error& e);
  // Fails every pending op and refuses every later one (`status`,
  // `message`); HVD_ERR_SHUT_DOWN is the clean end. Once: a call after
  // one that went through does nothing.
  void fail_everything(const ProgressLock::Held& progress, hvd_status status,
                       const std::string& message);

 private:
  void await_verdict();
  // The flight recorder's dump, before `message`'s failure ends the ops.
  void record(hvd_status status, const std::string& message);

  int32_t rank_;
  Wakeup& wakeup_;
  ControlPlane* control_ = nullptr;
  p2p::Engine* engine_ = nullptr;
  Executor* executor_ = nullptr;
  ProcessSets* sets_ = nullptr;
  OpIntake* intake_ = nullptr;
  FlightRecorder* flight_ = nullptr;
  std::chrono::nanoseconds verdict_wait_{std::chrono::seconds(1)};

  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::string message_;
  int32_t rank_at_fault_ = -1;
  // The progress lock's.
  int32_t transport_fault_peer_ = -1;
  std::string transport_fault_;
  bool failed_everything_ = false;
};

}  // namespace hvd::runtime
