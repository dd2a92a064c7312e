// The checks a plugin table passes before the core calls into it.
#include <cstring>
#include <string>
#include <vector>

#include "plugin/loader.h"

namespace hvd {
namespace {

struct Required {
  const char* name;
  size_t offset;
};

#define HVD_REQUIRED(type, field) \
  Required { #field, offsetof(type, field) }

const std::vector<Required>& required_functions(int kind) {
  static const std::vector<Required> transport = {
      HVD_REQUIRED(hvd_transport_api, init),
      HVD_REQUIRED(hvd_transport_api, finalize),
      HVD_REQUIRED(hvd_transport_api, get_properties),
      HVD_REQUIRED(hvd_transport_api, last_error),
      HVD_REQUIRED(hvd_transport_api, listen),
      HVD_REQUIRED(hvd_transport_api, accept),
      HVD_REQUIRED(hvd_transport_api, connect),
      HVD_REQUIRED(hvd_transport_api, conn_test),
      HVD_REQUIRED(hvd_transport_api, conn_peer),
      HVD_REQUIRED(hvd_transport_api, conn_close),
      HVD_REQUIRED(hvd_transport_api, listener_close),
      HVD_REQUIRED(hvd_transport_api, mr_reg),
      HVD_REQUIRED(hvd_transport_api, mr_dereg),
      HVD_REQUIRED(hvd_transport_api, isend),
      HVD_REQUIRED(hvd_transport_api, irecv),
      HVD_REQUIRED(hvd_transport_api, test),
      HVD_REQUIRED(hvd_transport_api, abort),
  };
  static const std::vector<Required> reducer = {
      HVD_REQUIRED(hvd_reducer_api, init),
      HVD_REQUIRED(hvd_reducer_api, finalize),
      HVD_REQUIRED(hvd_reducer_api, last_error),
      HVD_REQUIRED(hvd_reducer_api, score),
      HVD_REQUIRED(hvd_reducer_api, post),
      HVD_REQUIRED(hvd_reducer_api, progress),
      HVD_REQUIRED(hvd_reducer_api, task_free),
      HVD_REQUIRED(hvd_reducer_api, abort_task),
  };
  static const std::vector<Required> adapter = {
      HVD_REQUIRED(hvd_adapter_api, allocate_output),
      HVD_REQUIRED(hvd_adapter_api, done),
  };
  static const std::vector<Required> none;
  switch (kind) {
    case HVD_PLUGIN_TRANSPORT:
      return transport;
    case HVD_PLUGIN_REDUCER:
      return reducer;
    case HVD_PLUGIN_ADAPTER:
      return adapter;
  }
  return none;
}

// The size of the kind's table in ABI 1.0: every later 1.x table is at least
// this large, so these sizes are frozen (the last 1.0 field never changes).
size_t v1_0_table_size(int kind) {
  switch (kind) {
    case HVD_PLUGIN_TRANSPORT:
      return HVD_STRUCT_SIZE(hvd_transport_api, iget);
    case HVD_PLUGIN_REDUCER:
      return HVD_STRUCT_SIZE(hvd_reducer_api, abort_task);
    case HVD_PLUGIN_ADAPTER:
      return HVD_STRUCT_SIZE(hvd_adapter_api, done);
  }
  return 0;
}

std::string version_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

const char* plugin_kind_name(int kind) {
  switch (kind) {
    case HVD_PLUGIN_TRANSPORT:
      return "transport";
    case HVD_PLUGIN_REDUCER:
      return "reducer";
    case HVD_PLUGIN_ADAPTER:
      return "adapter";
  }
  return "unknown kind";
}

std::string check_plugin_table(int kind, const void* table) {
  const std::string core_version =
      version_text(HVD_ABI_VERSION_MAJOR, HVD_ABI_VERSION_MINOR);
  if (table == nullptr) {
    return "the entry point returned no table (the plugin declines ABI " +
           core_version + ")";
  }
  const size_t needed = v1_0_table_size(kind);
  if (needed == 0) return "unknown plugin kind " + std::to_string(kind);

  const auto* header = static_cast<const hvd_plugin_header*>(table);
  const std::string too_small =
      "table of " + std::to_string(header->struct_size) +
      " bytes, ABI 1.0 needs " + std::to_string(needed);
  if (header->struct_size < HVD_STRUCT_SIZE(hvd_plugin_header, version)) {
    return too_small;
  }
  if (header->kind != kind) {
    std::string found = v1_0_table_size(header->kind) != 0
                            ? plugin_kind_name(header->kind)
                            : std::to_string(header->kind);
    return "table kind is " + found + ", expected " + plugin_kind_name(kind);
  }
  if (header->abi_major != HVD_ABI_VERSION_MAJOR) {
    return "built for ABI " +
           version_text(header->abi_major, header->abi_minor) +
           ", this core is " + core_version;
  }
  if (header->struct_size < needed) return too_small;
  if (header->name == nullptr) return "the table has no name";

  std::vector<std::string> missing;
  const auto* base = static_cast<const unsigned char*>(table);
  for (const Required& fn : required_functions(kind)) {
    void (*pointer)(void) = nullptr;
    std::memcpy(&pointer, base + fn.offset, sizeof pointer);
    if (pointer == nullptr) missing.push_back(fn.name);
  }
  if (missing.empty()) return "";
  std::string text =
      missing.size() == 1 ? "required function " : "required functions ";
  for (size_t i = 0; i < missing.size(); ++i) {
    text += (i ? ", '" : "'") + missing[i] + "'";
  }
  return text + " missing";
}

}  // namespace hvd
