// Device memory in the executor: whether a process set's CUDA tensors go
// direct over the gpu transport or are staged through host memory (decided
// once per set, memory kind and reducer availability, and logged), the
// staging copies on the op's stream, and the device fusion path's stages.
#include "common/error.h"
#include "common/log.h"
#include "device/device.h"
#include "horovod_plugin/enums.h"
#include "runtime/executor.h"
#include "runtime/memory_route.h"
#include "runtime/process_set.h"
#include "runtime/reducers.h"

namespace hvd::runtime {

bool Executor::stage_device_memory(const Slot& slot) {
  const hvd_mem_kind kind = slot.device.kind;
  const Response& r = slot.response;
  const std::vector<std::string> reducers = reducers_.running(
      r.collective, r.op, r.dtype, slot.set->planning_team->view(), kind);
  auto key = std::make_tuple(slot.set->id, kind, reducers.empty());
  auto known = staged_routes_.find(key);
  if (known != staged_routes_.end()) return known->second;
  const RouteDecision decision =
      choose_memory_route(kind, transports_serving(engine_, *slot.set->team),
                          gpu_transport_of(engine_, gpu_transports_), reducers);
  HVD_LOG(INFO) << "process set " << slot.set->id << ": " << decision.reason;
  const bool staged = decision.route == MemoryRoute::kStage;
  staged_routes_.emplace(key, staged);
  return staged;
}

void Executor::plan_device(Slot& slot, bool& direct) {
  const Response& r = slot.response;
  for (PendingOp* op : slot.ops) {
    if (op && op->stream) {
      slot.stream = op->stream;
      break;
    }
  }
  // Host tensors take the host path, unless they come with a stream of
  // the fake device: its memory is host memory, which the host transports
  // move.
  if (r.mem_kind == HVD_MEM_HOST &&
      (slot.stream == nullptr ||
       stream_device(slot.stream).kind != HVD_MEM_HOST)) {
    slot.stream = nullptr;
    return;
  }
  slot.device = {r.mem_kind, r.device_id};
  const bool scales =
      scales_values(r.collective, r.op, r.prescale, r.postscale);
  bool carried = true;
  if (r.mem_kind != HVD_MEM_HOST) {
    // Core-allocated outputs are host memory.
    carried = !stage_device_memory(slot);
    for (size_t e = 0; e < slot.ops.size() && carried; ++e) {
      if (!slot.ops[e]) continue;
      for (const TensorView& out : slot.ops[e]->outputs) {
        if (out.device.kind != r.mem_kind) carried = false;
      }
    }
  }
  const std::string no_path =
      carried ? DeviceFusion::unavailable(slot.device) : "";
  if (carried && no_path.empty()) {
    DeviceRun& run = slot.device_run;
    run.active = true;
    run.device = slot.device;
    run.stream =
        slot.stream ? slot.stream : device_fusion_.stream_for(run.device);
    run.dtype = r.dtype;
    for (PendingOp* op : slot.ops) {
      if (op && op->ready_event) run.ready.push_back(op->ready_event);
    }
    slot.stream = run.stream;
    if (device_path_logged_
            .emplace(std::make_tuple(slot.set->id, r.mem_kind), true)
            .second) {
      HVD_LOG(INFO) << "process set " << slot.set->id << ": "
                    << (r.mem_kind == HVD_MEM_HOST
                            ? "fake-device"
                            : hvd_plugin::mem_kind_name(r.mem_kind))
                    << " tensors on the device fusion path (batched copies "
                       "and scaling on the stream, completion by event)";
    }
    // Scaled values need a buffer of the core's: never in place.
    direct = direct && !scales;
    if (r.mem_kind != HVD_MEM_HOST) slot.args.stream = run.stream;
    return;
  }
  if (carried && direct && !scales) {  // a lone tensor, in place
    slot.args.stream = slot.stream;
    return;
  }
  if (carried) {
    auto key = std::make_tuple(slot.set->id, r.mem_kind);
    if (device_path_logged_.emplace(key, true).second) {
      HVD_LOG(INFO) << "process set " << slot.set->id << ": fused or scaled "
                    << hvd_plugin::mem_kind_name(r.mem_kind)
                    << " tensors staged through host memory: " << no_path;
    }
  }
  slot.staged = true;
  slot.args.device = {HVD_MEM_HOST, 0};
  direct = false;
}

void Executor::take_scaling(Slot& slot) {
  DeviceRun& run = slot.device_run;
  hvd_coll_args& a = slot.args;
  const hvd_collective c = slot.response.collective;
  if (c != HVD_COLL_ALLREDUCE && c != HVD_COLL_REDUCESCATTER) return;
  run.prescale = a.prescale;
  run.postscale = a.postscale;
  a.prescale = 1.0;
  a.postscale = 1.0;
  run.send = const_cast<void*>(a.send);
  run.send_count = a.count;
  run.recv = a.recv;
  run.recv_count =
      c == HVD_COLL_ALLREDUCE ? a.count : slot.layout.counts[slot.set->rank];
}

uint8_t* Executor::fusion_base(Slot& slot, uint64_t bytes) {
  if (!slot.device_run.active) return slot.buffer.ensure(bytes);
  return device_fusion_.buffer(slot.set->id, slot.device_run.device,
                               static_cast<size_t>(&slot - slots_.data()),
                               bytes);
}

bool Executor::device_stage_done(Slot& slot) {
  DeviceRun& run = slot.device_run;
  const size_t index = static_cast<size_t>(&slot - slots_.data());
  if (!run.issued) {
    const bool in = slot.stage == Stage::kCopyIn;
    std::vector<CopyEntry> copies;
    for (const CopyJob& j : in ? slot.copy_in : slot.copy_out) {
      if (j.bytes > 0 && j.dst != j.src)
        copies.push_back({j.dst, j.src, j.bytes});
    }
    if (in) {
      device_fusion_.issue_copy_in(run, index, copies, describe(slot));
    } else {
      device_fusion_.issue_copy_out(run, index, copies, describe(slot));
    }
  }
  if (!device_fusion_.reached(run, index, describe(slot))) return false;
  run.issued = false;
  return true;
}

void Executor::device_copy(Slot& slot, uint8_t* dst, const uint8_t* src,
                           uint64_t bytes) {
  // Both sides named by the response's device: the device layer copies
  // with the runtime's unified addressing, whichever side is host memory.
  const hvd_device_api* dev = device_api();
  hvd_status s = dev->memcpy_async(dev->ctx, dst, slot.device, src, slot.device,
                                   bytes, slot.stream);
  if (s != HVD_OK) {
    throw Error(s, describe(slot) + ": staging copy of " +
                       std::to_string(bytes) + " bytes on " +
                       hvd_plugin::mem_kind_name(slot.device.kind) +
                       " device " + std::to_string(slot.device.id) +
                       " failed: " + last_error());
  }
}

void Executor::finish_device_copies(Slot& slot) {
  hvd_status s = synchronize_copies(slot.device, slot.stream);
  if (s != HVD_OK) {
    throw Error(s, describe(slot) +
                       ": waiting for staging copies failed: " + last_error());
  }
}

}  // namespace hvd::runtime
