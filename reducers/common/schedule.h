// A reducer's plan for one collective: a graph of sends, receives and local
// steps (reduce, copy, scale), each starting once the steps it depends on
// have finished. Algorithms only build the graph (reading as the textbook
// describes them); this engine runs it without blocking: it posts what is
// ready, tests what is in flight, runs local steps between polls, and stops
// when nothing more can move. Several chunks of a pipelined algorithm are
// thus in flight at once, and a reduction overlaps the transfers of the
// next chunks.
//
// Storage is reused across tasks (reset() keeps capacity), so nothing is
// allocated per progress() call, nor per task once warm.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "horovod/reducer.h"

namespace hvd::reducers {

// What the steps of one schedule act on.
struct ScheduleContext {
  const hvd_p2p_api* p2p_api = nullptr;
  hvd_p2p* p2p = nullptr;
  const hvd_team* team = nullptr;  // peers are ranks of this team
  const hvd_device_api* device = nullptr;
  hvd_device memory{HVD_MEM_HOST, 0};
  hvd_dtype dtype = HVD_UINT8;
  hvd_reduce_op op = HVD_OP_SUM;  // a kernel op: SUM, MIN, MAX, PRODUCT
  size_t element_size = 1;
};

class Schedule {
 public:
  using Op = uint32_t;
  static constexpr Op kNone = UINT32_MAX;
  // Distinct message steps per task (the p2p layer's sub-tag range).
  static constexpr uint32_t kSteps = 1u << 16;

  void reset(const ScheduleContext& context);

  // Building. `peer` is a team rank, `step` is reduced modulo kSteps.
  Op send(int32_t peer, const void* buf, size_t bytes, uint32_t step);
  Op recv(int32_t peer, void* buf, size_t bytes, uint32_t step);
  Op reduce(void* dst, const void* a, const void* b, size_t count);  // a op b
  Op copy(void* dst, const void* src, size_t bytes);
  Op scale(void* buf, size_t count, double factor);
  // A local step of the reducer's own: fn(ctx, arg) runs on the progress
  // thread once its predecessors have finished; a status other than HVD_OK
  // fails the schedule (the reducer's last_error text goes with it).
  using LocalFn = hvd_status (*)(void* ctx, const void* arg);
  Op call(LocalFn fn, void* ctx, const void* arg);
  // Does nothing; a point to depend on (e.g. "all of these").
  Op join();
  // A join after every step built from `first` on (size() before them).
  Op join_since(Op first);
  // `op` starts only after `before` has finished; kNone is ignored.
  void after(Op op, Op before);
  void after(Op op, std::initializer_list<Op> before) {
    for (Op b : before) after(op, b);
  }
  size_t size() const { return ops_.size(); }

  // Running. start() freezes the graph.
  void start();
  // HVD_AGAIN while running, HVD_OK when every step has finished, or the
  // error that stopped it (out->peer: the world rank at fault, or -1); an
  // error is sticky. message() explains a failure.
  hvd_status progress(hvd_completion* out);
  // Any thread: the next progress() fails with `reason` and `peer`.
  void abort(hvd_status reason, int32_t peer);
  const std::string& message() const { return message_; }
  // Requests posted and not seen to finish (after a failure: abandoned).
  size_t in_flight() const { return in_flight_.size(); }
  // Tests the abandoned requests once more; true when none is left.
  bool drain();

 private:
  enum Kind : uint8_t { kSend, kRecv, kReduce, kCopy, kScale, kCall, kJoin };
  struct Step {
    Kind kind;
    int32_t peer;
    uint32_t tag;
    void* dst;
    const void* a;
    const void* b;
    size_t size;  // bytes for messages and copies, elements otherwise
    double factor;
    LocalFn fn;        // kCall only
    uint32_t waiting;  // unfinished predecessors
  };
  struct InFlight {
    Op op;
    hvd_p2p_request* request;
  };

  static bool is_message(Kind kind) { return kind == kSend || kind == kRecv; }
  void make_ready(Op op);
  Op add(const Step& step);
  void finish(Op op);
  bool poll();       // tests requests in flight; false if none finished
  bool post();       // posts ready messages; false if none could be
  bool run_local();  // runs one ready local step; false if none
  hvd_status fail(hvd_status status, int32_t world_peer, std::string message);
  int32_t world_rank(int32_t team_rank) const;
  std::string describe(const Step& step) const;

  ScheduleContext ctx_;
  std::vector<Step> ops_;
  std::vector<std::pair<Op, Op>> edges_;   // (before, op)
  std::vector<uint32_t> successor_begin_;  // per op, plus one at the end
  std::vector<Op> successors_;
  std::vector<uint32_t> cursor_;  // scratch of start()
  std::vector<Op> ready_messages_, ready_local_, retry_;
  size_t local_head_ = 0;
  std::vector<InFlight> in_flight_;
  size_t finished_ = 0;
  bool started_ = false;

  hvd_status failed_ = HVD_OK;
  hvd_completion failure_{};
  std::string message_;
  // An abort request: status in the high half, peer in the low (0: none).
  std::atomic<uint64_t> abort_{0};
};

}  // namespace hvd::reducers
