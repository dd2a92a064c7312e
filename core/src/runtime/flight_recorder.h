// The flight recorder ([flight_recorder], on by default): per process set,
// a ring of this rank's last collectives (flight_ring.h), kept so a stalled
// or failed job says where each rank was without anyone having enabled
// anything. The runtime calls the hooks as an op moves: submitted (it
// enters negotiation), negotiated (the executor takes its response),
// posted (its reducer task runs), done. They are called by the holder of
// the progress lock only, allocate nothing once a process set has its
// ring, and read no clock: each stage is stamped with the time the runtime
// last gave tick() (the start of its current cycle, or a moment of a round
// over the control plane), so a stamp is at most a cycle late.
//
// dump() writes one log line per entry to stderr and the rings as JSON to
// <dir>/flight-rank<R>-pid<P>.json (written whole, then renamed into
// place); it allocates nothing, so the same code runs from a signal
// handler. The runtime dumps on a stall warning and on a failure; the
// recorder itself on SIGUSR1 (its own thread dumps, so a rank stuck in a
// plugin call still answers) and from a fatal signal's handler (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT, and SIGTERM unless a failure was dumped
// already), which then hands the signal on to the handler it replaced.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/flight_ring.h"

namespace hvd::runtime {

struct PendingOp;

class FlightRecorder {
 public:
  static constexpr int64_t kMaxEntries = 1 << 16;  // 8 MiB per set
  struct Options {
    size_t entries = 64;  // per process set
    std::string dir;      // where dumps go; created when first needed
    int32_t rank = 0, size = 1;
  };
  // Becomes the process's recorder for signals (the latest one made).
  explicit FlightRecorder(const Options& options);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // <log dir>/ from [log] dir, or $TMPDIR/horovod-logs-<uid> when "".
  static std::string log_dir(const std::string& configured);
  // The writer's clock: what the stages are stamped with from now on.
  void tick(std::chrono::steady_clock::time_point now) {
    now_ = now.time_since_epoch().count();
  }
  // The writer's hooks. `world_ranks` are the op's process set's members
  // (copied when the set's ring is made).
  void submitted(PendingOp& op, const std::vector<int32_t>& world_ranks);
  void negotiated(const PendingOp& op);
  // The number posted() takes for a reducer's or transport's name
  // (FlightNames::id): looked up once per fused response, not per op.
  uint8_t name_id(const std::string& name) { return names_.id(name); }
  void posted(const PendingOp& op, uint8_t reducer, uint8_t transport);
  void done(const PendingOp& op, bool ok, int32_t peer);
  // Every unfinished entry waits on `peer` (a failed rank), where it names
  // none yet.
  void blame(int32_t peer);
  bool unfinished() const;

  // Any thread, a signal handler included. A dump already under way makes
  // this one return at once.
  void dump(const char* reason);
  const char* file() const { return file_; }
  int dumps() const { return dumps_.load(); }

 private:
  friend struct FlightSignals;
  static constexpr size_t kRingSlots = 64;  // by process set id, modulo
  FlightRing* ring_for(int32_t set, const std::vector<int32_t>& world_ranks);
  FlightEntry* entry_of(const PendingOp& op);
  void serve_signals();  // the SIGUSR1 thread
  void write_file(const FlightHeader& header, const FlightRing* const* rings,
                  size_t count);

  size_t entries_;
  int64_t now_ = 0;  // steady clock nanoseconds, from tick()
  int32_t rank_, size_;
  int64_t wall_offset_ns_;
  char host_[64] = "";
  char dir_[512] = "";
  char file_[600] = "";
  FlightNames names_;
  std::array<std::atomic<FlightRing*>, kRingSlots> rings_{};
  std::vector<std::unique_ptr<FlightRing>> owned_;  // the writer's
  std::atomic_flag dumping_ = ATOMIC_FLAG_INIT;
  std::atomic<int> dumps_{0};
  std::atomic<bool> failure_dumped_{false};
  int wake_pipe_[2] = {-1, -1};  // SIGUSR1 -> the thread
  std::thread thread_;
};

}  // namespace hvd::runtime
