// How the data of one response reaches the transports, by memory kind:
// host tensors go as they are; device tensors go directly when something
// carries that kind (the job's gpu scope, the [transport] gpu transport
// open on every rank; or every transport serving the process set) and a
// loaded reducer runs that kind on the set, and are staged through host
// memory otherwise. choose_memory_route is a pure decision, so it is tested
// without a GPU; the executor gathers its inputs with the functions below,
// applies it and logs it once per process set and kind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "horovod/abi.h"

namespace hvd::p2p {
class Engine;
class Team;
}  // namespace hvd::p2p

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
// process set's peers; empty for a set of one rank), `gpu`, and `reducers`
// (the loaded reducers that run `kind` on the set).
RouteDecision choose_memory_route(
    hvd_mem_kind kind, const std::vector<TransportMemory>& transports,
    const GpuTransport& gpu, const std::vector<std::string>& reducers);

// Whether a response scales its values (AVERAGE, a prescale or postscale
// factor): the device layer has no CUDA kernel for that, so device tensors
// of such a response are staged whatever the route (the host scales them).
bool scales_values(hvd_collective collective, hvd_reduce_op op, double prescale,
                   double postscale);

// The intra and inter transports serving the other members of `team`.
std::vector<TransportMemory> transports_serving(const p2p::Engine& engine,
                                                const p2p::Team& team);

// The engine's gpu scope as the decision sees it, `configured` being
// [transport] gpu.
GpuTransport gpu_transport_of(const p2p::Engine& engine,
                              std::vector<std::string> configured);

// The one memory kind of the tensors of a response (`devices`, in entry
// order). Throws hvd::Error HVD_ERR_INVALID_ARGUMENT naming `what` and both
// devices when they differ in kind or device id: one response runs on one
// device, so such tensors must be sent as separate ops.
hvd_device uniform_device(const std::vector<hvd_device>& devices,
                          const std::string& what);

}  // namespace hvd::runtime
