// The stall inspector, on world rank 0 beside the coordinator: it notes
// when each rank of a process set submits an op (a collective, a barrier,
// a join, a process set change) and when the op is negotiated. An op that
// some ranks submitted and others have not for longer than [stall_check]
// warning_time is a likely deadlock (ranks in different calls, a rank that
// failed or finished early): check() then reports, for every such op, its
// call and process set, the ranks that submitted it and the ranks missing,
// and where each missing rank is instead (the ops it waits in), again
// every warning_time while they still wait. A tensor that waits
// shutdown_time makes check() return the message the job fails with.
// Pure logic, the time passed in, so it is tested alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace hvd::runtime {

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;

  // shutdown_time zero: never shut down.
  StallInspector(std::chrono::nanoseconds warning_time,
                 std::chrono::nanoseconds shutdown_time);

  // Set rank `set_rank` of process set `set` (whose set ranks are the world
  // ranks `world_ranks`) submitted `name`; `call` says what it is
  // ("allreduce", "barrier", "hvd_remove_process_set(2)"), for messages.
  void submitted(int32_t set, const std::vector<int32_t>& world_ranks,
                 const std::string& name, int32_t set_rank,
                 Clock::time_point now, const std::string& call = "");
  // Set rank `set_rank` joined process set `set`: it takes part in the
  // set's other ops with zeros, and waits for every rank to join.
  void joined(int32_t set, const std::vector<int32_t>& world_ranks,
              int32_t set_rank, Clock::time_point now);
  // `name` was negotiated (every rank submitted or joined).
  void resolved(int32_t set, const std::string& name);
  // Every rank of `set` joined.
  void joins_resolved(int32_t set) { resolved(set, kJoinKey); }
  // Process set `set` is gone, and what it waited for with it.
  void forget(int32_t set) { sets_.erase(set); }

  struct Verdict {
    std::string warning;   // to log at WARNING; "" when nothing to say
    std::string shutdown;  // the job fails with this; "" when not
  };
  // Cheap when called every cycle: looks at the table at most a few times
  // per warning_time.
  Verdict check(Clock::time_point now);

  size_t pending() const;

 private:
  // Joins are one entry per set whatever each rank named its join.
  static constexpr const char* kJoinKey = "\x01join";
  struct Waiting {
    Clock::time_point first;
    std::string call;
    std::vector<bool> present;  // by set rank
  };
  struct Set {
    std::vector<int32_t> world_ranks;
    std::unordered_map<std::string, Waiting> waiting;
  };
  Waiting& note(int32_t id, const std::vector<int32_t>& world_ranks,
                const std::string& name, Clock::time_point now);
  std::string describe(int32_t id, const Set& set, const std::string& name,
                       const Waiting& w, Clock::time_point now) const;
  // "allreduce 'grad' (process set 2)", "join (process set 2)".
  static std::string op_text(int32_t id, const std::string& name,
                             const Waiting& w);
  // Where world rank `world` is: the ops it submitted that still wait.
  std::string whereabouts(int32_t world) const;

  std::chrono::nanoseconds warning_time_, shutdown_time_, check_interval_;
  Clock::time_point next_check_{}, last_warning_{};
  bool warned_ = false;
  std::unordered_map<int32_t, Set> sets_;
};

}  // namespace hvd::runtime
