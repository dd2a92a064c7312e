// The stall inspector, on world rank 0 beside the coordinator: it notes
// when each rank of a process set submits a tensor and when the tensor is
// negotiated. A tensor that some ranks submitted and others have not for
// longer than [stall_check] warning_time is a likely deadlock (ranks
// submitting different tensors, or only some ranks submitting): check()
// then reports which tensors wait for which ranks, again every
// warning_time while they still wait. With shutdown_time > 0, a tensor
// that waits that long makes check() return the message the job fails
// with. Pure logic, the time passed in, so it is tested alone.
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
  // ranks `world_ranks`) submitted `name`.
  void submitted(int32_t set, const std::vector<int32_t>& world_ranks,
                 const std::string& name, int32_t set_rank,
                 Clock::time_point now);
  // `name` was negotiated (every rank submitted or joined).
  void resolved(int32_t set, const std::string& name);
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
  struct Waiting {
    Clock::time_point first;
    std::vector<bool> present;  // by set rank
  };
  struct Set {
    std::vector<int32_t> world_ranks;
    std::unordered_map<std::string, Waiting> waiting;
  };
  std::string describe(int32_t id, const Set& set, const std::string& name,
                       const Waiting& w, Clock::time_point now) const;

  std::chrono::nanoseconds warning_time_, shutdown_time_, check_interval_;
  Clock::time_point next_check_{}, last_warning_{};
  bool warned_ = false;
  std::unordered_map<int32_t, Set> sets_;
};

}  // namespace hvd::runtime
