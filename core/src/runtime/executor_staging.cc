// Device memory in the executor: whether a process set's CUDA tensors go
// direct over the gpu transport or are staged through host memory (decided
// once per set, memory kind and reducer availability, and logged), and the
// staging copies on the op's stream.
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
