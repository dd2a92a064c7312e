#include "runtime/memory_route.h"

#include <algorithm>

#include "common/error.h"
#include "horovod_plugin/enums.h"
#include "p2p/engine.h"
#include "p2p/team.h"

namespace hvd::runtime {
namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    text += (i ? ", '" : "'") + names[i] + "'";
  }
  return text;
}

std::string device_text(hvd_device d) {
  return std::string(hvd_plugin::mem_kind_name(d.kind)) + " device " +
         std::to_string(d.id);
}

}  // namespace

RouteDecision choose_memory_route(
    hvd_mem_kind kind, const std::vector<TransportMemory>& transports,
    const GpuTransport& gpu, const std::vector<std::string>& reducers) {
  RouteDecision d;
  if (kind == HVD_MEM_HOST) return d;
  const std::string kinds = hvd_plugin::mem_kind_name(kind);
  const uint32_t bit = HVD_MEM_BIT(kind);
  std::vector<std::string> can, cannot;
  for (const TransportMemory& t : transports) {
    ((t.mem_kinds & bit) ? can : cannot).push_back(t.name);
  }
  // What would carry the tensors as they are.
  std::string carrier;
  bool plural = false;
  if (!gpu.loaded.empty() && (gpu.loaded_mem_kinds & bit)) {
    carrier = "[transport] gpu '" + gpu.loaded + "'";
  } else if (!transports.empty() && cannot.empty()) {
    plural = can.size() > 1;
    carrier =
        std::string("transport") + (plural ? "s " : " ") + quoted_list(can);
  }
  if (!carrier.empty() && !reducers.empty()) {
    d.route = MemoryRoute::kDirect;
    d.reason = kinds + " tensors go direct over " + carrier + " (reducer" +
               (reducers.size() > 1 ? "s " : " ") + quoted_list(reducers) + ")";
    return d;
  }
  d.route = MemoryRoute::kStage;
  d.reason = kinds + " tensors staged through host memory: ";
  if (!carrier.empty()) {
    d.reason += carrier + (plural ? " move " : " moves ") + kinds +
                " memory, but no loaded reducer runs " + kinds +
                " memory on this process set (the native reducer runs a "
                "transport's own collectives)";
    return d;
  }
  if (transports.empty()) {
    d.reason += "no transport in this process set";
  } else {
    d.reason += std::string("transport") + (cannot.size() > 1 ? "s " : " ") +
                quoted_list(cannot) + " cannot move " + kinds + " memory";
  }
  if (gpu.configured.empty()) {
    d.reason += "; [transport] gpu names no transport";
  } else if (!gpu.loaded.empty()) {
    d.reason += "; [transport] gpu '" + gpu.loaded + "' cannot move " + kinds +
                " memory";
  } else {
    d.reason +=
        "; [transport] gpu " + quoted_list(gpu.configured) + " not loaded";
    if (!gpu.not_loaded_reason.empty())
      d.reason += ": " + gpu.not_loaded_reason;
  }
  return d;
}

bool scales_values(hvd_collective collective, hvd_reduce_op op, double prescale,
                   double postscale) {
  const bool reduces =
      collective == HVD_COLL_ALLREDUCE || collective == HVD_COLL_REDUCESCATTER;
  return reduces &&
         (op == HVD_OP_AVERAGE || prescale != 1.0 || postscale != 1.0);
}

std::vector<TransportMemory> transports_serving(const p2p::Engine& engine,
                                                const p2p::Team& team) {
  std::vector<TransportMemory> out;
  for (int32_t i = 0; i < team.size(); ++i) {
    if (i == team.rank()) continue;
    const p2p::Transport* t = engine.transport_of(team.world_rank(i));
    if (!t) continue;
    bool listed = std::any_of(out.begin(), out.end(), [&](const auto& m) {
      return m.name == t->name();
    });
    if (!listed) out.push_back({t->name(), t->properties().mem_kinds});
  }
  return out;
}

GpuTransport gpu_transport_of(const p2p::Engine& engine,
                              std::vector<std::string> configured) {
  GpuTransport gpu;
  gpu.configured = std::move(configured);
  if (const p2p::Transport* t = engine.gpu_transport()) {
    gpu.loaded = t->name();
    gpu.loaded_mem_kinds = t->properties().mem_kinds;
  } else {
    gpu.not_loaded_reason = engine.gpu_unavailable();
  }
  return gpu;
}

hvd_device uniform_device(const std::vector<hvd_device>& devices,
                          const std::string& what) {
  if (devices.empty()) return {HVD_MEM_HOST, 0};
  const hvd_device first = devices[0];
  for (const hvd_device& d : devices) {
    if (d.kind != first.kind || d.id != first.id) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  what + ": tensors on " + device_text(first) + " and " +
                      device_text(d) +
                      " in one response; send them as separate ops");
    }
  }
  return first;
}

}  // namespace hvd::runtime
