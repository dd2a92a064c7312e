#include "runtime/memory_route.h"

#include "common/error.h"
#include "horovod_plugin/enums.h"

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
    const GpuTransport& gpu) {
  RouteDecision d;
  if (kind == HVD_MEM_HOST) return d;
  const std::string kinds = hvd_plugin::mem_kind_name(kind);
  const uint32_t bit = HVD_MEM_BIT(kind);
  if (!gpu.loaded.empty() && (gpu.loaded_mem_kinds & bit)) {
    d.route = MemoryRoute::kDirect;
    d.reason = kinds + " tensors move directly: [transport] gpu '" +
               gpu.loaded + "' moves " + kinds + " memory";
    return d;
  }
  std::vector<std::string> can, cannot;
  for (const TransportMemory& t : transports) {
    ((t.mem_kinds & bit) ? can : cannot).push_back(t.name);
  }
  if (!transports.empty() && cannot.empty()) {
    d.route = MemoryRoute::kDirect;
    d.reason = kinds + " tensors move directly: transport" +
               (can.size() > 1 ? "s " : " ") + quoted_list(can) + " move" +
               (can.size() > 1 ? " " : "s ") + kinds + " memory";
    return d;
  }
  d.route = MemoryRoute::kStage;
  d.reason = kinds + " tensors staged through host memory: ";
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
