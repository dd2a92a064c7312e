// What the ofi transport does on a given provider, decided once from the
// fi_info that fi_getinfo returned: every provider-dependent choice lives
// here, as a pure function, so the choices for providers this machine lacks
// (efa, verbs;ofi_rxm) are unit-tested against their recorded capabilities.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hvd_ofi {

// The context modes the transport offers fi_getinfo (hints->mode): the
// fi_context2 at the head of every request serves both.
constexpr uint64_t kHintModes = FI_CONTEXT | FI_CONTEXT2;

// The transport's own limits and settings that enter the decisions.
struct PlanInput {
  uint32_t max_requests = 1024;     // [transport.ofi] max_requests
  uint64_t max_message_bytes = 0;   // [transport.ofi] cap; 0: the provider's
  bool trust_send_order = true;     // false: as if FI_ORDER_SAS were missing
  bool register_always = false;     // true: as if FI_MR_LOCAL were set
  uint32_t device_kinds = 0;        // HVD_MEM_BIT of kinds with devices here
  uint32_t reserved_tag_bits = 16;  // control flag + connection id
  uint32_t min_user_tag_bits = 8;   // fewer left for the caller: refuse
  uint32_t control_receives = 32;   // posted for handshakes and probes
};

struct EndpointPlan {
  // Why this fi_info cannot be used ("" when it can). The rest is then
  // meaningless.
  std::string refusal;

  // Memory registration (domain_attr->mr_mode, or FI_LOCAL_MR in mode).
  bool register_local = false;     // FI_MR_LOCAL: every transfer gets a desc
  bool provider_keys = false;      // FI_MR_PROV_KEY: else keys are ours
  bool virtual_addresses = false;  // FI_MR_VIRT_ADDR: RMA targets are VAs
  bool allocated_only = false;     // FI_MR_ALLOCATED: only mapped pages
  bool bind_to_endpoint = false;   // FI_MR_ENDPOINT: fi_mr_bind + enable
  bool register_device = false;    // FI_MR_HMEM: device buffers need a desc

  // Operation contexts (mode): the fi_context2 at the head of every request
  // serves both; 0 when the provider keeps no state in it.
  size_t context_bytes = 0;

  // Ordering. Without send-after-send ordering on both sides, same-tag
  // messages could match out of order: then only one send per connection
  // and tag is in flight at a time, each completing only once the peer's
  // provider has it (FI_TRANSMIT_COMPLETE), and nothing is injected (an
  // inject has no completion to wait for).
  bool ordered = false;
  bool one_send_per_tag = false;
  uint64_t send_flags = 0;  // fi_tsendmsg flags for data sends

  // Sizes. Messages above max_message_bytes are split by the core (it is
  // the transport's max_message_bytes property); sends up to inject_bytes
  // go by fi_tinject (0: never).
  uint64_t max_message_bytes = 0;
  size_t inject_bytes = 0;

  // Queue depths: sends in flight per connection, and receives this
  // transport keeps posted on the endpoint (data and control together).
  uint32_t max_requests = 0;
  uint32_t max_posted_receives = 0;
  uint32_t control_receives = 0;

  // Tags (ep_attr->mem_tag_format): the usable low bits, the caller's share.
  uint32_t tag_bits = 0;
  uint32_t user_tag_bits = 0;

  uint32_t mem_kinds = 0;  // HVD_MEM_BIT(kind) the transport can send from
  bool manual_progress = false;
};

// The plan for one fi_info (never null fields: fi_allocinfo's shape).
EndpointPlan plan_endpoint(const fi_info& info, const PlanInput& input);

// The first entry of fi_getinfo's list that can be used, with its plan;
// null with *why listing each refusal when none can.
const fi_info* choose_endpoint(const fi_info* list, const PlanInput& input,
                               EndpointPlan* plan, std::string* why);

// One line for the log: provider, mr mode, ordering, sizes, tags.
std::string describe(const fi_info& info, const EndpointPlan& plan);

}  // namespace hvd_ofi
