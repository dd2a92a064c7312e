// Where ops enter and leave this rank: hvd_enqueue checks an op, gives it
// to its process set's table (op_table.h: the owner, which refuses a name
// already in flight) and queues it for the next cycle; complete() ends it
// (the adapter, the callback, the handle) and has the table free it. Once
// the runtime stops, every later op is refused with the reason it
// stopped.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "horovod/horovod.h"
#include "runtime/messages.h"
#include "runtime/pending_op.h"

namespace hvd::runtime {

class FlightRecorder;
class ProcessSets;
class Wakeup;

class OpIntake {
 public:
  OpIntake(int32_t rank, std::chrono::nanoseconds spin_time, ProcessSets& sets,
           Wakeup& wakeup, FlightRecorder* flight);

  // Any thread. Throws hvd::Error for an invalid op (naming it and what is
  // wrong), a duplicate name in flight, or a runtime that has stopped.
  // `adjust`, when given, amends the op's request (process set changes).
  hvd_handle_s* enqueue(const hvd_op& op,
                        const std::function<void(Request&)>& adjust = {});
  // Ends `op`: its table releases it (throwing hvd::Error HVD_ERR_INTERNAL,
  // before any callback, when it was completed before), then it is freed.
  // `blamed`: the peer a failure is laid on, or -1.
  void complete(PendingOp* op, hvd_status status, const std::string& message,
                int32_t blamed);

  // The ops enqueued since the last take, into `into` (emptied first);
  // their sets' tables own them.
  void take_submitted(std::vector<PendingOp*>& into);
  // Each op enqueued and not yet taken.
  void visit_submitted(const std::function<void(PendingOp*)>& fn) const;
  // Refuses every later op with `status` and `message`.
  void stop(hvd_status status, const std::string& message);
  // The rank whose hvd_shutdown ends the job (a refusal names it).
  void note_shutdown(int32_t shutdown_rank);
  void close();  // stops, keeping the reason stop() gave
  bool stopped() const;
  // Some process set holds an op of this rank (the progress lock's holder).
  bool has_ops_in_flight() const;

  // New ops since the last take_new(): whether any came, and when the
  // first and the latest came (a stream of them is negotiated as one
  // batch).
  bool has_new() const { return has_new_; }
  bool take_new() { return has_new_.exchange(false); }
  std::chrono::steady_clock::time_point first_new() const;
  std::chrono::steady_clock::time_point last_new() const;
  // Whether an op was enqueued after `t`. Read after Wakeup::set_sleeping
  // (true), it misses no op whose enqueue found the thread awake.
  bool new_since(std::chrono::steady_clock::time_point t) const;

 private:
  int32_t rank_;
  std::chrono::nanoseconds spin_time_;
  ProcessSets& sets_;
  Wakeup& wakeup_;
  FlightRecorder* flight_;

  mutable std::mutex mutex_;
  std::vector<PendingOp*> submitted_;  // not owned
  bool stopped_ = false;
  hvd_status stop_status_ = HVD_ERR_SHUT_DOWN;
  std::string stop_message_;
  int32_t shutdown_rank_ = -1;
  // Another rank's shutdown refused an op here, and the log said so.
  bool early_shutdown_logged_ = false;

  std::atomic<bool> has_new_{false};
  std::atomic<int64_t> first_new_ns_{0}, last_new_ns_{0};  // steady clock
};

}  // namespace hvd::runtime
