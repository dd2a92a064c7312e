#include "runtime/executor.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/log.h"
#include "device/device.h"
#include "horovod_plugin/enums.h"
#include "runtime/agreement.h"
#include "runtime/flight_recorder.h"
#include "runtime/fusion.h"
#include "runtime/memory_route.h"
#include "runtime/scale_factors.h"
#include "timeline/phases.h"

namespace hvd::runtime {
namespace {

// Copies between progress calls are cut to this, so one large copy does not
// hold up the transfers of the other slot.
constexpr uint64_t kCopyChunk = 8ull << 20;

}  // namespace

Executor::Executor(p2p::Engine& engine, ReducerSet& reducers, Complete complete)
    : engine_(engine),
      reducers_(reducers),
      nested_(reducers),
      complete_(std::move(complete)),
      device_fusion_(engine) {
  for (Slot& slot : slots_) slot.buffer.set_engine(&engine_);
  engine_.set_nested(&nested_);
}

Executor::~Executor() {
  engine_.set_nested(nullptr);
  for (Slot& slot : slots_) {
    if (slot.task) {
      slot.reducer->api().abort_task(slot.task, HVD_ERR_SHUT_DOWN, -1);
      slot.reducer->api().task_free(slot.task);
      slot.task = nullptr;
    }
  }
}

void Executor::push(ProcessSet* set, Response response) {
  queue_.emplace_back(set, std::move(response));
}

bool Executor::awaiting_device() const {
  for (const Slot& slot : slots_) {
    if (slot.busy && slot.device_run.issued) return true;
  }
  return false;
}

bool Executor::idle() const {
  if (!queue_.empty()) return false;
  for (const Slot& slot : slots_) {
    if (slot.busy) return false;
  }
  return true;
}

PendingOp* Executor::take(ProcessSet* set, const std::string& name,
                          bool may_be_absent) {
  auto it = set->negotiating.find(name);
  if (it == set->negotiating.end()) {
    if (may_be_absent) return nullptr;
    throw Error(HVD_ERR_INTERNAL, "process set " + std::to_string(set->id) +
                                      ": a response names '" + name +
                                      "', which this rank never submitted");
  }
  PendingOp* op = it->second;
  set->negotiating.erase(it);
  op->move_to(OpState::kRunning);
  return op;
}

bool Executor::progress() {
  bool moved = false;
  while (!queue_.empty()) {
    auto& [set, response] = queue_.front();
    if (response.kind != ResponseKind::kData) {
      finish_control(set, response);
      queue_.pop_front();
      moved = true;
      continue;
    }
    Slot* free_slot = nullptr;
    for (Slot& slot : slots_) {
      if (!slot.busy) {
        free_slot = &slot;
        break;
      }
    }
    if (!free_slot) break;
    ProcessSet* s = set;
    Response r = std::move(response);
    queue_.pop_front();
    start(*free_slot, s, std::move(r));
    moved = true;
  }
  engine_.progress();
  for (Slot& slot : slots_) {
    if (slot.busy && advance(slot)) moved = true;
  }
  if (moved) engine_.note_activity();
  return moved;
}

void Executor::finish_control(ProcessSet* set, Response& response) {
  switch (response.kind) {
    case ResponseKind::kError:
      for (const Entry& e : response.entries) {
        if (PendingOp* op = take(set, e.name, true)) {
          complete_(op, response.error_status, response.error);
        }
      }
      return;
    case ResponseKind::kBarrier:
      for (const Entry& e : response.entries) {
        if (PendingOp* op = take(set, e.name, true)) complete_(op, HVD_OK, "");
      }
      return;
    case ResponseKind::kJoin: {
      PendingOp* op = set->join;
      set->join = nullptr;
      if (!op) return;
      op->handle->outputs.push_back(
          int32_output(response.last_joined, "join output"));
      complete_(op, HVD_OK, "");
      return;
    }
    case ResponseKind::kData:
      return;
  }
}

std::string Executor::describe(const Slot& slot) const {
  std::string names;
  for (size_t i = 0; i < slot.response.entries.size() && i < 4; ++i) {
    names += (i ? ", '" : "'") + slot.response.entries[i].name + "'";
  }
  if (slot.response.entries.size() > 4) {
    names +=
        " and " + std::to_string(slot.response.entries.size() - 4) + " more";
  }
  return std::string(collective_name(slot.response.collective)) + " " + names;
}

void Executor::start(Slot& slot, ProcessSet* set, Response response) {
  slot.busy = true;
  slot.set = set;
  slot.response = std::move(response);
  const Response& r = slot.response;
  slot.ops.clear();
  slot.op_errors.assign(r.entries.size(), "");
  slot.op_status.assign(r.entries.size(), HVD_OK);
  for (const Entry& e : r.entries) {
    // Only an allreduce runs on a rank that joined without the tensor.
    slot.ops.push_back(
        take(set, e.name,
             r.collective == HVD_COLL_ALLREDUCE && set->join != nullptr));
  }
  if (flight_) {
    for (const PendingOp* op : slot.ops) {
      if (op) flight_->negotiated(*op);
    }
  }
  slot.copy_in.clear();
  slot.copy_out.clear();
  slot.job = 0;
  slot.job_offset = 0;
  slot.stage = Stage::kCopyIn;
  slot.task = nullptr;
  slot.reducer = nullptr;
  slot.args = hvd_coll_args{};
  slot.args.struct_size = sizeof(hvd_coll_args);
  slot.args.collective = r.collective;
  slot.args.dtype = r.dtype;
  slot.args.op = r.op;
  slot.args.prescale = 1.0;
  slot.args.postscale = 1.0;
  slot.args.device = {r.mem_kind, r.device_id};
  engine_.reset_context(&slot.p2p, set->team.get(),
                        static_cast<uint32_t>(set->id), set->sequence++);

  allocate_outputs(slot);
  bool direct = r.entries.size() == 1 && r.entries[0].shapes.size() == 1 &&
                slot.ops[0] != nullptr && slot.op_errors[0].empty() &&
                !engine_.needs_registration();
  slot.staged = false;
  slot.device = {HVD_MEM_HOST, 0};
  slot.stream = nullptr;
  slot.device_run = DeviceRun{};
  plan_device(slot, direct);
  slot.direct = direct;
  p2p::Engine::set_memory(&slot.p2p, slot.args.device);
  lay_out_slot(slot);
  if (slot.device_run.active) take_scaling(slot);
  if (slot.layout.moves_data) {
    slot.turn = next_turn_++;
    uint64_t bytes = response_bytes(r, set->size());
    reducers_.candidates(r.collective, r.op, r.dtype,
                         set->planning_team->view(), slot.args.device.kind,
                         bytes, r.reducer, slot.candidates);
  }
  slot.rows.clear();
  if (traced()) {
    for (size_t e = 0; e < r.entries.size(); ++e) {
      if (slot.ops[e]) {
        slot.rows.push_back(timeline_->intern(r.entries[e].name));
      }
    }
    mark(slot, nullptr);  // QUEUE
    if (!slot.direct && !slot.copy_in.empty()) mark(slot, timeline::kMemcpyIn);
  }
}

void Executor::mark(Slot& slot, const char* name) {
  if (!traced()) return;
  for (const std::string* row : slot.rows) {
    if (name) {
      timeline_->begin(row, name);
    } else {
      timeline_->end(row);
    }
  }
}

void Executor::allocate_outputs(Slot& slot) {
  const Response& r = slot.response;
  if (r.collective != HVD_COLL_ALLGATHER && r.collective != HVD_COLL_ALLTOALL) {
    return;
  }
  for (size_t e = 0; e < r.entries.size(); ++e) {
    PendingOp* op = slot.ops[e];
    if (!op) continue;
    op->outputs.clear();
    for (size_t t = 0; t < r.entries[e].shapes.size(); ++t) {
      const std::vector<int64_t> shape =
          gathered_shape(r, e, t, slot.set->rank);
      Output out;
      const TensorView& like = op->inputs[t];
      if (op->adapter) {
        hvd_tensor like_desc = describe_tensor(like);
        hvd_tensor got{};
        got.struct_size = sizeof(got);
        hvd_status s = op->adapter->api->allocate_output(
            op->adapter->ctx, op->adapter_op, static_cast<int32_t>(t),
            &like_desc, static_cast<int32_t>(shape.size()), shape.data(), &got);
        try {
          if (s != HVD_OK) {
            throw Error(s, "adapter '" + op->adapter->name +
                               "' could not allocate output " +
                               std::to_string(t) + " (" + status_name(s) + ")");
          }
          out.view =
              view_tensor(got, op->describe() + " output " + std::to_string(t) +
                                   " from adapter '" + op->adapter->name + "'");
          if (out.view.dtype != like.dtype || out.view.shape != shape) {
            throw Error(HVD_ERR_INVALID_ARGUMENT,
                        op->describe() + ": adapter '" + op->adapter->name +
                            "' allocated output " + std::to_string(t) +
                            " of the wrong dtype or shape (wanted " +
                            shape_text(shape) + ")");
          }
        } catch (const Error& err) {
          slot.op_errors[e] = err.what();
          slot.op_status[e] = err.status();
          break;
        }
      } else {
        uint64_t bytes = element_count(shape) * dtype_size(like.dtype);
        void* p = nullptr;
        if (posix_memalign(&p, 64, std::max<uint64_t>(bytes, 1)) != 0) {
          slot.op_errors[e] = op->describe() +
                              ": out of memory for an output of " +
                              std::to_string(bytes) + " bytes";
          slot.op_status[e] = HVD_ERR_OUT_OF_MEMORY;
          break;
        }
        out.memory = {static_cast<uint8_t*>(p), free};
        out.view.data = out.memory.get();
        out.view.device = {HVD_MEM_HOST, 0};
        out.view.dtype = like.dtype;
        out.view.shape = shape;
        out.view.elements = element_count(shape);
        out.view.bytes = bytes;
      }
      op->outputs.push_back(out.view);
      op->handle->outputs.push_back(std::move(out));
    }
  }
}

void Executor::lay_out_slot(Slot& slot) {
  const Response& r = slot.response;
  std::vector<Held>& held = slot.held;
  held.resize(r.entries.size());
  for (size_t e = 0; e < held.size(); ++e) {
    held[e].inputs = slot.ops[e] != nullptr;
    held[e].outputs = slot.ops[e] != nullptr && slot.op_errors[e].empty();
  }
  lay_out(r, slot.set->rank, slot.set->size(), held, slot.direct, slot.layout);
  const Layout& l = slot.layout;
  slot.base = slot.direct ? nullptr : fusion_base(slot, l.buffer_bytes);
  hvd_coll_args& a = slot.args;
  if (r.collective == HVD_COLL_ALLREDUCE ||
      r.collective == HVD_COLL_REDUCESCATTER) {
    a.op = reducer_op(r.op);
    a.prescale = r.prescale;
    a.postscale = reducer_postscale(r.op, r.postscale, slot.set->size());
  }
  if (r.collective == HVD_COLL_BROADCAST) a.root = r.root;
  a.send = resolve(slot, l.send);
  a.recv = resolve(slot, l.recv);
  a.count = l.count;
  if (!l.counts.empty()) {
    a.counts = l.counts.data();
    a.displs = l.displs.data();
  }
  if (!l.send_counts.empty()) {
    a.send_counts = l.send_counts.data();
    a.send_displs = l.send_displs.data();
  }
  for (auto [copies, jobs] : {std::pair{&l.copy_in, &slot.copy_in},
                              std::pair{&l.copy_out, &slot.copy_out}}) {
    for (const Copy& c : *copies) {
      uint8_t* to = resolve(slot, c.to);
      const uint8_t* from = resolve(slot, c.from);
      if (to != from) jobs->push_back({to, from, c.bytes});
    }
  }
}

uint8_t* Executor::resolve(const Slot& slot, const Place& place) const {
  switch (place.in) {
    case Place::In::kBuffer:
      return slot.base + place.offset;
    case Place::In::kInput:
      return slot.ops[place.entry]->inputs[place.tensor].data + place.offset;
    case Place::In::kOutput:
      return slot.ops[place.entry]->outputs[place.tensor].data + place.offset;
    case Place::In::kZeros:
      return nullptr;
  }
  return nullptr;
}

bool Executor::copy(Slot& slot, std::vector<CopyJob>& jobs) {
  uint64_t budget = kCopyChunk;
  while (slot.job < jobs.size() && budget > 0) {
    CopyJob& j = jobs[slot.job];
    uint64_t n = std::min(budget, j.bytes - slot.job_offset);
    if (n > 0) {
      if (j.src) {
        if (j.dst + slot.job_offset != j.src + slot.job_offset) {
          if (slot.device.kind != HVD_MEM_HOST) {
            device_copy(slot, j.dst + slot.job_offset, j.src + slot.job_offset,
                        n);
          } else {
            copy_large(j.dst + slot.job_offset, j.src + slot.job_offset, n);
          }
        }
      } else {
        std::memset(j.dst + slot.job_offset, 0, n);
      }
    }
    slot.job_offset += n;
    budget -= n;
    if (slot.job_offset == j.bytes) {
      ++slot.job;
      slot.job_offset = 0;
    }
  }
  return slot.job == jobs.size();
}

void Executor::post(Slot& slot) {
  std::string unsupported;
  for (size_t index : slot.candidates) {
    const Reducer& reducer = reducers_.at(index);
    hvd_task* task = nullptr;
    if (traced()) timeline_->set_task_rows(&slot.rows);
    hvd_status s = reducer.api().post(reducer.instance(), &slot.args,
                                      p2p::Engine::api(), &slot.p2p, &task);
    if (traced()) timeline_->set_task_rows(nullptr);
    if (s == HVD_OK) {
      slot.reducer = &reducer;
      slot.task = task;
      if (flight_) record_posted(slot);
      if (traced() && !slot.rows.empty()) {
        std::string phase =
            reducer.name() + "_" + timeline::op_phase(slot.response.collective);
        for (char& c : phase) c = static_cast<char>(toupper(c));
        mark(slot, timeline_->intern(phase)->c_str());
      }
      HVD_LOG(DEBUG) << describe(slot) << ": " << slot.response.entries.size()
                     << " op(s), "
                     << response_bytes(slot.response, slot.set->size())
                     << " bytes, reducer '" << reducer.name() << "', "
                     << (slot.direct ? "in place" : "fusion buffer")
                     << ", task " << slot.p2p.tag.sequence;
      return;
    }
    if (s == HVD_ERR_UNSUPPORTED) {
      unsupported +=
          (unsupported.empty() ? "" : "; ") + reducer.error("unsupported");
      continue;
    }
    // Other ranks may have started: the job cannot go on in step.
    throw Error(s, describe(slot) + ": " + reducer.error("post failed"));
  }
  // Every rank decides the same, so failing just these ops keeps them in step.
  std::string message =
      describe(slot) + ": no reducer runs " +
      collective_name(slot.response.collective) + " of " +
      std::to_string(response_bytes(slot.response, slot.set->size())) +
      " bytes on " + std::to_string(slot.set->size()) +
      " rank(s) (loaded: " + reducers_.names() + ")" +
      (unsupported.empty() ? "" : ": " + unsupported);
  for (size_t e = 0; e < slot.ops.size(); ++e) {
    if (!slot.op_errors[e].empty()) continue;
    slot.op_errors[e] = message;
    slot.op_status[e] = HVD_ERR_UNSUPPORTED;
  }
}

void Executor::record_posted(const Slot& slot) {
  const p2p::Transport* transport = nullptr;
  const p2p::Team& team = *slot.set->team;
  if (slot.device.kind != HVD_MEM_HOST && !slot.staged) {
    transport = engine_.gpu_transport();
  } else if (team.size() > 1) {
    transport = engine_.transport_of(team.world_rank((team.rank() + 1) %
                                                     team.size()));
  }
  static const std::string self = "self";
  const uint8_t reducer = flight_->name_id(slot.reducer->name());
  const uint8_t via = flight_->name_id(transport ? transport->name() : self);
  for (const PendingOp* op : slot.ops) {
    if (op) flight_->posted(*op, reducer, via);
  }
}

bool Executor::advance(Slot& slot) {
  bool moved = false;
  // Tasks are posted in start order, on every rank the same (native
  // collectives match by order).
  if (slot.stage == Stage::kCopyIn && slot.layout.moves_data && slot.job == 0 &&
      slot.turn != posting_turn_) {
    return false;
  }
  if (slot.stage == Stage::kCopyIn) {
    if (slot.device_run.active) {
      moved = !slot.device_run.issued;
      if (!device_stage_done(slot)) return moved;
    } else {
      moved = slot.job < slot.copy_in.size();
      if (!copy(slot, slot.copy_in)) return true;
      if (slot.device.kind != HVD_MEM_HOST) finish_device_copies(slot);
    }
    slot.job = 0;
    slot.job_offset = 0;
    if (!slot.direct && !slot.copy_in.empty()) mark(slot, nullptr);
    if (slot.layout.moves_data) {
      post(slot);
      ++posting_turn_;
    }
    slot.stage = slot.task ? Stage::kRun : Stage::kCopyOut;
    moved = true;
  }
  if (slot.stage == Stage::kRun) {
    hvd_completion c{};
    c.struct_size = sizeof(c);
    c.peer = -1;
    if (traced()) timeline_->set_task_rows(&slot.rows);
    hvd_status s = slot.reducer->api().progress(slot.task, &c);
    if (traced()) timeline_->set_task_rows(nullptr);
    if (s == HVD_AGAIN) return moved;
    mark(slot, nullptr);  // the reducer's span
    const Reducer* reducer = slot.reducer;
    reducer->api().task_free(slot.task);
    slot.task = nullptr;
    if (s != HVD_OK) {
      std::string detail = engine_.last_error();
      std::string message =
          describe(slot) + ": " +
          reducer->error(std::string("failed (") + status_name(s) + ")");
      if (!detail.empty()) message += " [" + detail + "]";
      throw Error(s, message, c.peer);
    }
    slot.stage = Stage::kCopyOut;
    moved = true;
  }
  if (slot.stage == Stage::kCopyOut) {
    if (slot.job == 0 && slot.job_offset == 0 && !slot.direct &&
        !slot.copy_out.empty() && !slot.device_run.issued) {
      mark(slot, timeline::kMemcpyOut);
    }
    if (slot.device_run.active) {
      if (!device_stage_done(slot)) return moved;
    } else {
      if (!copy(slot, slot.copy_out)) return true;
      if (slot.device.kind != HVD_MEM_HOST) finish_device_copies(slot);
    }
    finish(slot);
    moved = true;
  }
  return moved;
}

void Executor::finish(Slot& slot) {
  if (!slot.direct && !slot.copy_out.empty()) mark(slot, nullptr);
  mark(slot, nullptr);  // the op's span
  for (size_t e = 0; e < slot.ops.size(); ++e) {
    PendingOp* op = slot.ops[e];
    if (!op) continue;
    if (slot.response.collective == HVD_COLL_ALLTOALL) {
      op->handle->received_splits = slot.layout.received_splits;
    }
    if (slot.op_errors[e].empty()) {
      complete_(op, HVD_OK, "");
    } else {
      complete_(op, slot.op_status[e], slot.op_errors[e]);
    }
  }
  slot.ops.clear();
  slot.busy = false;
  slot.set = nullptr;
}

void Executor::fail_all(hvd_status status, const std::string& message) {
  for (Slot& slot : slots_) {
    if (!slot.busy) continue;
    if (slot.task) {
      slot.reducer->api().abort_task(slot.task, status, -1);
      slot.reducer->api().task_free(slot.task);
      slot.task = nullptr;
    }
    if (slot.device_run.active) device_fusion_.settle(slot.device_run);
    for (PendingOp* op : slot.ops) {
      if (op) complete_(op, status, prefixed(*op, message));
    }
    slot.ops.clear();
    slot.busy = false;
  }
  // Queued responses' ops are still the process sets' (negotiating).
  queue_.clear();
}

}  // namespace hvd::runtime
