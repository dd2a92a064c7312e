// A collectives communicator of the shm transport (the collectives
// extension's hvd_coll_comm): a segment shared by the team's members (see
// comm_layout.h) through which they run allreduce, broadcast, allgatherv and
// barrier without messages.
//
// Collectives run in the order they were posted, in two lanes (small ones
// apart from large ones, comm_layout.h), each as rounds of phases:
// a member does a phase's work (copies into its slot, reduces), publishes
// its step, and the next phase waits until every member has published as
// far. Allreduces of a few bytes travel in one cache line with the step
// (comm_layout.h); small ones are one-shot (every member copies its input into
// its slot and reduces all slots in team order); larger ones two-shot, in
// rounds of one slot (each member reduces its share of the round straight out
// of its input and the others' slots, in team order, and the others copy the
// result), so every element's value is computed once and every member holds
// the same bits.
//
// Everything runs on the core's thread but abort(), which any thread may
// call.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm_layout.h"
#include "common/intrusive_list.h"
#include "horovod/transport.h"
#include "horovod_plugin/abort_latch.h"
#include "request.h"
#include "segment.h"

namespace hvd_shm {

class Transport;
class WakeSocket;

class Comm {
 public:
  // `key` names the segment in the bootstrap store; the same on every
  // member.
  Comm(Transport& transport, const hvd_team& team, std::string key);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // comm_create(): HVD_AGAIN until every member has mapped the segment.
  hvd_status create();
  Transport& transport() { return t_; }
  const std::vector<int32_t>& members() const { return members_; }
  int32_t process_set() const { return process_set_; }

  hvd_status allreduce(const void* send, void* recv, size_t count,
                       hvd_dtype dtype, hvd_reduce_op op, Request** out);
  hvd_status broadcast(void* buf, size_t count, hvd_dtype dtype, int32_t root,
                       Request** out);
  hvd_status allgatherv(const void* send, size_t send_count, void* recv,
                        const size_t* recv_counts, const size_t* recv_displs,
                        hvd_dtype dtype, Request** out);
  hvd_status barrier(Request** out);

  // Runs what the peers' steps allow; whether anything moved.
  bool progress();
  // Whether progress() has something to do (a few loads: what a spin
  // polls).
  bool ready() const;
  // Before the core sleeps: raises this member's sleeping flag; true when
  // work is ready after all (then the flag is down again and the core must
  // not sleep).
  bool arm();
  void disarm();
  // Whether a collective of several phases passed a sync within `window`:
  // the core should poll on rather than sleep (its spin is timed from the
  // last completion, and a long collective completes nothing for a while).
  bool moving(std::chrono::steady_clock::time_point now,
              std::chrono::nanoseconds window) const {
    return !idle() && now - last_sync_ < window;
  }
  // Whether the core should poll on rather than sleep because the last
  // collective had to sleep and this one has waited less than `window`:
  // members that sleep in turn pay a wake-up per collective, and polling
  // through one wake-up's latency brings them back in step.
  bool patient(std::chrono::steady_clock::time_point now,
               std::chrono::nanoseconds window);
  // More members on this host than it has processors.
  bool oversubscribed() const { return oversubscribed_; }

  // Any thread: pending and later collectives fail with `reason`.
  void abort(hvd_status reason, int32_t peer);
  // Pending collectives complete with HVD_ERR_SHUT_DOWN.
  void shut_down();

 private:
  enum class Kind : uint8_t {
    kInline,  // one-shot through the inline slots (kInlineBytes at most)
    kOneShot,
    kTwoShot,
    kBroadcast,
    kAllgatherv,
    kBarrier
  };

  struct Op {
    Kind kind = Kind::kBarrier;
    Request* req = nullptr;
    const uint8_t* send = nullptr;
    uint8_t* recv = nullptr;
    size_t count = 0;  // elements (allgatherv: this member's)
    size_t esize = 1;
    hvd_dtype dtype = HVD_UINT8;
    hvd_reduce_op op = HVD_OP_SUM;
    int32_t root = 0;
    bool streaming = false;  // large destination: non-temporal stores
    std::vector<size_t> counts, displs;
    int lane = 0;
    uint64_t round_elems = 0;  // two-shot: elements per round
    uint64_t first_round = 0;  // the communicator's round count at its start
    uint64_t rounds = 1;
    uint64_t round = 0;
    uint32_t phase = 0;
    bool waiting = false;
    uint64_t target = 0;                // the step every member must reach
    hvd_transport_common::Link queued;  // in its lane's queue
  };

  // A lane's collectives in posting order (the head runs) and its counts.
  struct Lane {
    hvd_transport_common::List<Op, &Op::queued> queue;
    uint64_t step = 0;        // this member's published step
    uint64_t next_round = 0;  // rounds of the collectives posted so far
    uint64_t slot_bytes = 0;
  };

  void attach();
  Op* new_op(Kind kind, int lane, Request** out);
  bool idle() const {
    return lanes_[0].queue.empty() && lanes_[1].queue.empty();
  }
  hvd_status start(Op* op);  // queues it, runs its first phase if it can
  hvd_status refusal() const;
  bool advance(Op& op);  // true when complete
  // Bumps and publishes this member's step (also in `line`, an inline slot
  // whose data it completes) and wakes members that sleep.
  void publish(Lane& lane, InlineSlot* line);
  bool arrived(int lane, uint64_t target) const;
  bool arrived(const Op& op) const;  // op.target, where op looks for it
  void finish(Op* op, hvd_status status, int32_t peer);
  void fail_all(hvd_status status, int32_t peer, const std::string& why);
  void check_peers_alive();

  // The collectives (comm_ops.cc).
  uint32_t phases(const Op& op) const;
  void run_phase(Op& op);
  void finish_round(Op& op);
  void reduce(const Op& op, void* dst, const void* a, const void* b,
              size_t count) const;
  // Whether a one-shot reduction may read this member's part from its
  // input rather than its slot: the slot's line has likely moved to a
  // peer that read it, the input is still in this processor's cache.
  bool own_input_readable(const Op& op) const;
  static uint64_t parity(const Op& op) {
    return (op.first_round + op.round) & 1;
  }
  InlineSlot& inline_slot(int32_t rank, uint64_t parity) const {
    return control_[rank].inline_slot[parity];
  }
  uint8_t* slot(int32_t rank, const Op& op) const {
    const uint64_t p = parity(op);
    uint8_t* member = data_ + static_cast<uint64_t>(rank) * member_bytes_;
    return op.lane == 0 ? member + p * small_slot_bytes_
                        : member + 2 * small_slot_bytes_ + p * slot_bytes_;
  }
  uint64_t lane_slot_bytes(const Op& op) const {
    return lanes_[op.lane].slot_bytes;
  }

  Transport& t_;
  std::string key_;
  std::vector<int32_t> members_;  // world ranks in team order
  int32_t process_set_ = 0;
  int32_t rank_ = 0;
  int32_t size_ = 1;

  std::unique_ptr<Segment> segment_;
  bool attached_ = false;
  bool ready_ = false;
  CommHeader* header_ = nullptr;
  RankControl* control_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t slot_bytes_ = 0;
  uint64_t one_shot_max_ = 0;
  uint64_t small_slot_bytes_ = 0;
  uint64_t member_bytes_ = 0;
  WakeSocket* wake_ = nullptr;

  Lane lanes_[kLanes];
  bool sleeping_ = false;
  bool oversubscribed_ = false;
  std::chrono::steady_clock::time_point last_sync_{};
  bool slept_ = false;   // the core slept during the running collective
  bool sleepy_ = false;  // ... and during the one before
  std::chrono::steady_clock::time_point first_wait_{};  // of the running one
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<Op*> free_ops_;

  hvd_plugin::AbortLatch abort_;
};

}  // namespace hvd_shm
