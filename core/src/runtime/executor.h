// Execution of negotiated responses on this rank, in the order negotiation
// gave them: each data response takes one of two slots, each with its own
// persistent fusion buffer, so the copy-in of the next response overlaps
// the current one's transfers. A slot copies the inputs in (in chunks,
// between progress calls), posts a reducer task (the planner's candidates in
// order, falling through on HVD_ERR_UNSUPPORTED), drives it, copies the
// results out and completes the ops. A response of one tensor runs straight
// in the caller's buffers when no transport needs registered memory.
// Device (CUDA) tensors the transports move as they are (memory_route.h),
// and fake-device tensors (host memory with a stream), take the device
// fusion path (device_fusion.h): a fusion buffer in device memory, batched
// copies and scaling on the stream, completion by event. Otherwise CUDA
// tensors are copied through the host fusion buffer with the device layer,
// and the host collective runs on it.
//
// Errors, barriers and joins need no data and complete when reached.
// Everything runs on the background thread; a failure of the data path is
// thrown as hvd::Error (the runtime then fails everything).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "p2p/engine.h"
#include "runtime/device_fusion.h"
#include "runtime/fusion_buffer.h"
#include "runtime/fusion_layout.h"
#include "runtime/messages.h"
#include "runtime/nested.h"
#include "runtime/process_set.h"
#include "runtime/reducers.h"
#include "timeline/timeline.h"

namespace hvd::runtime {

class FlightRecorder;

class Executor {
 public:
  using Complete =
      std::function<void(PendingOp*, hvd_status, const std::string&)>;

  Executor(p2p::Engine& engine, ReducerSet& reducers, Complete complete);
  ~Executor();

  void push(ProcessSet* set, Response response);
  bool idle() const;
  // Whether a slot waits for device work (the caller polls soon).
  bool awaiting_device() const;
  // Advances the work; true when anything moved.
  bool progress();
  // Aborts the tasks in flight and fails every op the executor holds.
  void fail_all(hvd_status status, const std::string& message);
  // Marks the data path's phases on `timeline` (nullptr: none).
  void set_timeline(timeline::Timeline* timeline) { timeline_ = timeline; }
  // Notes when each op's response starts and its task is posted (nullptr:
  // nowhere).
  void set_flight_recorder(FlightRecorder* flight) { flight_ = flight; }
  // The transports configured for device memory ([transport] gpu), named in
  // the log when device tensors are staged through host memory.
  void set_gpu_transports(std::vector<std::string> names) {
    gpu_transports_ = std::move(names);
  }

 private:
  struct CopyJob {
    uint8_t* dst;
    const uint8_t* src;  // null: fill with zeros
    uint64_t bytes;
  };
  enum class Stage { kCopyIn, kRun, kCopyOut };
  struct Slot {
    bool busy = false;
    ProcessSet* set = nullptr;
    Response response;
    // Per entry, not owned (the set's table owns them until complete_);
    // null: joined here.
    std::vector<PendingOp*> ops;
    std::vector<std::string> op_errors;  // per entry; "" when fine
    std::vector<hvd_status> op_status;   // per entry, with op_errors
    FusionBuffer buffer;
    uint8_t* base = nullptr;  // the fusion buffer in use: host or device
    std::vector<CopyJob> copy_in, copy_out;
    size_t job = 0;
    uint64_t job_offset = 0;
    Stage stage = Stage::kCopyIn;
    // Its place among the slots that move data, in start order: tasks are
    // posted in that order (native collectives match by order).
    uint64_t turn = 0;
    bool direct = false;  // in the caller's buffers, not the fusion buffer
    // Where the response's tensors are; device memory is copied on
    // `stream` (through the host fusion buffer when staged).
    bool staged = false;
    hvd_device device{HVD_MEM_HOST, 0};
    hvd_stream stream = nullptr;
    DeviceRun device_run;  // active: on the device fusion path
    hvd_coll_args args{};
    std::vector<Held> held;  // per entry, for the layout
    Layout layout;           // args' counts and displacements point into it
    hvd_p2p_s p2p;
    std::vector<size_t> candidates;
    const Reducer* reducer = nullptr;
    hvd_task* task = nullptr;
    // Timeline rows of the ops here (empty when the timeline was off at
    // the start).
    std::vector<const std::string*> rows;
  };

  uint64_t next_turn_ = 0;     // the next started slot's turn
  uint64_t posting_turn_ = 0;  // the turn whose task is posted next
  bool traced() const { return timeline_ && timeline_->on(); }
  // Begins span `name` (nullptr: ends the innermost) on the slot's rows.
  void mark(Slot& slot, const char* name);

  void finish_control(ProcessSet* set, Response& response);
  void start(Slot& slot, ProcessSet* set, Response response);
  bool advance(Slot& slot);
  bool copy(Slot& slot, std::vector<CopyJob>& jobs);
  // Whether the device memory of the slot's response goes through host
  // memory (decided once per process set and kind, and logged then).
  bool stage_device_memory(const Slot& slot);
  // Where device tensors (or host tensors with a stream) run: the device
  // fusion path, in place, or staged; `direct` is cleared unless in place.
  void plan_device(Slot& slot, bool& direct);
  // Moves the scale factors from the reducer's arguments to the device run.
  void take_scaling(Slot& slot);
  // The fusion buffer of the slot's response: the host one, or in device
  // memory on the device path.
  uint8_t* fusion_base(Slot& slot, uint64_t bytes);
  // Issues the slot's copy stage on the device once; true when it is done.
  bool device_stage_done(Slot& slot);
  void device_copy(Slot& slot, uint8_t* dst, const uint8_t* src,
                   uint64_t bytes);
  void finish_device_copies(Slot& slot);
  void post(Slot& slot);
  // The flight recorder's view of a slot: its ops reached `posted`.
  void record_posted(const Slot& slot);
  void finish(Slot& slot);
  void allocate_outputs(Slot& slot);
  // Lays the response out (fusion_layout.h) and points the slot's args
  // and copies at the places it names.
  void lay_out_slot(Slot& slot);
  uint8_t* resolve(const Slot& slot, const Place& place) const;
  // Moves the op named `name` out of the set's negotiating view into a
  // slot (its table still owns it).
  PendingOp* take(ProcessSet* set, const std::string& name, bool may_be_absent);
  std::string describe(const Slot& slot) const;

  p2p::Engine& engine_;
  ReducerSet& reducers_;
  NestedRunner nested_;
  Complete complete_;
  std::deque<std::pair<ProcessSet*, Response>> queue_;
  std::array<Slot, 2> slots_;
  timeline::Timeline* timeline_ = nullptr;
  FlightRecorder* flight_ = nullptr;
  std::vector<std::string> gpu_transports_;
  // By process set, kind and whether no reducer runs the kind there.
  std::map<std::tuple<int32_t, hvd_mem_kind, bool>, bool> staged_routes_;
  DeviceFusion device_fusion_;
  // Process sets whose device path (or why none) is logged, by kind.
  std::map<std::tuple<int32_t, hvd_mem_kind>, bool> device_path_logged_;
};

}  // namespace hvd::runtime
