#include "endpoint_plan.h"

#include <algorithm>

#include "horovod/abi.h"

namespace hvd_ofi {
namespace {

// Mode bits this transport honours: the context modes, and FI_LOCAL_MR (the
// pre-1.5 spelling of FI_MR_LOCAL), handled as FI_MR_LOCAL.
constexpr uint64_t kModesHonoured = kHintModes | FI_LOCAL_MR;

// The highest set bit of the provider's tag format bounds the usable tag.
uint32_t usable_tag_bits(uint64_t format) {
  return format == 0 ? 64u
                     : 64u - static_cast<uint32_t>(__builtin_clzll(format));
}

std::string mode_names(uint64_t mode) { return fi_tostr(&mode, FI_TYPE_MODE); }

std::string provider_of(const fi_info& info) {
  return info.fabric_attr != nullptr && info.fabric_attr->prov_name != nullptr
             ? info.fabric_attr->prov_name
             : "?";
}

}  // namespace

EndpointPlan plan_endpoint(const fi_info& info, const PlanInput& input) {
  EndpointPlan plan;
  const std::string prov = provider_of(info);
  if (info.ep_attr->type != FI_EP_RDM) {
    plan.refusal = prov + ": not a reliable-datagram endpoint (" +
                   fi_tostr(&info.ep_attr->type, FI_TYPE_EP_TYPE) + ")";
    return plan;
  }
  if ((info.caps & FI_TAGGED) == 0) {
    plan.refusal = prov + ": no tagged messages (FI_TAGGED)";
    return plan;
  }
  if (uint64_t extra = info.mode & ~kModesHonoured; extra != 0) {
    plan.refusal = prov + ": needs mode " + mode_names(extra) +
                   ", which this transport does not provide";
    return plan;
  }

  uint64_t mr = info.domain_attr->mr_mode;
  // FI_MR_BASIC, the pre-1.5 mode, is these three bits together.
  if (mr & FI_MR_BASIC) {
    mr |= FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  }
  plan.register_local = input.register_always || (mr & FI_MR_LOCAL) != 0 ||
                        (info.mode & FI_LOCAL_MR) != 0;
  plan.provider_keys = (mr & FI_MR_PROV_KEY) != 0;
  plan.virtual_addresses = (mr & FI_MR_VIRT_ADDR) != 0;
  plan.allocated_only = (mr & FI_MR_ALLOCATED) != 0;
  plan.bind_to_endpoint = (mr & FI_MR_ENDPOINT) != 0;
  plan.register_device = (mr & FI_MR_HMEM) != 0;

  plan.context_bytes = (info.mode & FI_CONTEXT2)  ? sizeof(fi_context2)
                       : (info.mode & FI_CONTEXT) ? sizeof(fi_context)
                                                  : 0;

  plan.ordered = input.trust_send_order &&
                 (info.tx_attr->msg_order & FI_ORDER_SAS) != 0 &&
                 (info.rx_attr->msg_order & FI_ORDER_SAS) != 0;
  plan.one_send_per_tag = !plan.ordered;
  plan.send_flags = plan.ordered ? 0 : FI_COMPLETION | FI_TRANSMIT_COMPLETE;

  plan.max_message_bytes =
      std::min<uint64_t>(info.ep_attr->max_msg_size, uint64_t{1} << 62);
  if (input.max_message_bytes != 0) {
    plan.max_message_bytes =
        std::min(plan.max_message_bytes, input.max_message_bytes);
  }
  plan.inject_bytes = plan.ordered ? info.tx_attr->inject_size : 0;

  size_t tx = info.tx_attr->size;
  plan.max_requests =
      tx == 0 ? input.max_requests
              : static_cast<uint32_t>(std::min<size_t>(input.max_requests, tx));
  size_t rx = info.rx_attr->size;
  plan.max_posted_receives =
      rx == 0 ? UINT32_MAX
              : static_cast<uint32_t>(std::min<size_t>(rx, UINT32_MAX));
  // A small receive queue keeps most of its room for data.
  plan.control_receives = std::clamp<uint32_t>(
      std::min(input.control_receives, plan.max_posted_receives / 8), 1,
      input.control_receives);
  if (plan.max_posted_receives <= plan.control_receives) {
    plan.refusal = prov + ": a receive queue of " + std::to_string(rx) +
                   " leaves no room for data";
    return plan;
  }

  plan.tag_bits = usable_tag_bits(info.ep_attr->mem_tag_format);
  if (plan.tag_bits < input.reserved_tag_bits + input.min_user_tag_bits) {
    plan.refusal = prov + ": only " + std::to_string(plan.tag_bits) +
                   " tag bits (mem_tag_format)";
    return plan;
  }
  plan.user_tag_bits = plan.tag_bits - input.reserved_tag_bits;

  // FI_HMEM does not name the device interface; CUDA is the one this
  // transport registers (fi_mr_regattr with FI_HMEM_CUDA), where this host
  // has CUDA devices.
  plan.mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);
  if (info.caps & FI_HMEM) {
    plan.mem_kinds |= input.device_kinds & HVD_MEM_BIT(HVD_MEM_CUDA);
  }

  plan.manual_progress = info.domain_attr->data_progress != FI_PROGRESS_AUTO;
  return plan;
}

const fi_info* choose_endpoint(const fi_info* list, const PlanInput& input,
                               EndpointPlan* plan, std::string* why) {
  why->clear();
  for (const fi_info* i = list; i != nullptr; i = i->next) {
    EndpointPlan p = plan_endpoint(*i, input);
    if (p.refusal.empty()) {
      *plan = p;
      return i;
    }
    *why += (why->empty() ? "" : "; ") + p.refusal;
  }
  return nullptr;
}

std::string describe(const fi_info& info, const EndpointPlan& plan) {
  std::string mr;
  auto add = [&](bool on, const char* what) {
    if (on) mr += (mr.empty() ? "" : "+") + std::string(what);
  };
  add(plan.register_local, "local");
  add(plan.provider_keys, "prov_key");
  add(plan.virtual_addresses, "virt_addr");
  add(plan.allocated_only, "allocated");
  add(plan.bind_to_endpoint, "endpoint");
  add(plan.register_device, "hmem");
  std::string max = plan.max_message_bytes >= (uint64_t{1} << 62)
                        ? "unlimited"
                        : std::to_string(plan.max_message_bytes) + " B";
  return "ofi: provider " + provider_of(info) + ", domain " +
         (info.domain_attr->name ? info.domain_attr->name : "?") + ", mr " +
         (mr.empty() ? "none" : mr) + ", " +
         (plan.ordered ? "send-after-send ordered"
                       : "unordered: one send per tag in flight") +
         ", max message " + max + ", inject " +
         std::to_string(plan.inject_bytes) + " B, " +
         std::to_string(plan.user_tag_bits) + " tag bits, tx " +
         std::to_string(plan.max_requests) + ", rx " +
         std::to_string(plan.max_posted_receives) +
         ((plan.mem_kinds & HVD_MEM_BIT(HVD_MEM_CUDA)) ? ", host+cuda memory"
                                                       : ", host memory");
}

}  // namespace hvd_ofi
