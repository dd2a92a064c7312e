// How the data of one response reaches the transports, by memory kind:
// host tensors go as they are; device tensors go directly when the
// transports that would carry them declare that kind (or the transport
// configured for it in [transport] gpu is loaded and does), and are staged
// through host memory otherwise. A pure decision, so it is tested without
// a GPU; the executor applies it and logs it once per process set and kind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "horovod/abi.h"

namespace hvd::runtime {

enum class MemoryRoute {
  kHost,    // host memory: nothing to decide
  kDirect,  // device memory handed to the transports as it is
  kStage,   // device -> host buffer, host collective, host -> device
};

// A data transport as the decision sees it.
struct TransportMemory {
  std::string name;
  uint32_t mem_kinds = 0;  // HVD_MEM_BIT(kind) it can send from
};

// The transport configured for device memory ([transport] gpu).
struct GpuTransport {
  std::vector<std::string> configured;  // names, in the order tried
  std::string loaded;                   // "" when none is loaded
  uint32_t loaded_mem_kinds = 0;
  std::string not_loaded_reason;  // why none is loaded
};

struct RouteDecision {
  MemoryRoute route = MemoryRoute::kHost;
  // "CUDA tensors staged through host memory: transport 'shm' cannot move
  // CUDA memory; [transport] gpu 'nccl' not loaded: no CUDA device"; "" for
  // host memory.
  std::string reason;
};

// The route for tensors of `kind` over `transports` (those serving the
// process set's peers; empty for a set of one rank).
RouteDecision choose_memory_route(
    hvd_mem_kind kind, const std::vector<TransportMemory>& transports,
    const GpuTransport& gpu);

// The one memory kind of the tensors of a response (`devices`, in entry
// order). Throws hvd::Error HVD_ERR_INVALID_ARGUMENT naming `what` and both
// devices when they differ in kind or device id: one response runs on one
// device, so such tensors must be sent as separate ops.
hvd_device uniform_device(const std::vector<hvd_device>& devices,
                          const std::string& what);

}  // namespace hvd::runtime
