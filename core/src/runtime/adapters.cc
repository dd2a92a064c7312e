#include "runtime/adapters.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "plugin/abi_minors.h"
#include "plugin/loader.h"

namespace hvd::runtime {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::vector<std::unique_ptr<hvd_adapter_s>>& registry() {
  static std::vector<std::unique_ptr<hvd_adapter_s>> r;
  return r;
}

// Registered adapters to be called from the background thread only.
std::atomic<int> g_background_only{0};

bool background_only(const hvd_adapter_api* api) {
  return !called_from_any_thread(*api);
}

}  // namespace

void adapter_acquire(hvd_adapter_s* adapter) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const auto& a : registry()) {
    if (a.get() == adapter) {
      ++adapter->in_flight;
      return;
    }
  }
  throw Error(HVD_ERR_INVALID_ARGUMENT,
              "the op names an adapter that is not registered");
}

void adapter_release(hvd_adapter_s* adapter) { --adapter->in_flight; }

bool adapter_wants_background_thread() {
  return g_background_only.load(std::memory_order_relaxed) > 0;
}

}  // namespace hvd::runtime

using hvd::guard;

extern "C" {

HVD_EXPORT hvd_status hvd_register_adapter(const hvd_adapter_api* api,
                                           void* adapter_ctx,
                                           hvd_adapter** out) {
  return guard([&] {
    if (!api || !out) {
      throw hvd::Error(HVD_ERR_INVALID_ARGUMENT,
                       "hvd_register_adapter: null table or out pointer");
    }
    std::string problem = hvd::check_plugin_table(HVD_PLUGIN_ADAPTER, api);
    if (!problem.empty()) {
      throw hvd::Error(api->abi_major != HVD_ABI_VERSION_MAJOR
                           ? HVD_ERR_VERSION
                           : HVD_ERR_INVALID_ARGUMENT,
                       "hvd_register_adapter: " + problem);
    }
    auto adapter = std::make_unique<hvd_adapter_s>();
    adapter->api = api;
    adapter->ctx = adapter_ctx;
    adapter->name = api->name ? api->name : "?";
    *out = adapter.get();
    std::lock_guard<std::mutex> lock(hvd::runtime::registry_mutex());
    if (hvd::runtime::background_only(api)) ++hvd::runtime::g_background_only;
    hvd::runtime::registry().push_back(std::move(adapter));
    HVD_LOG(DEBUG) << "adapter '" << (*out)->name << "' registered";
    return HVD_OK;
  });
}

HVD_EXPORT hvd_status hvd_unregister_adapter(hvd_adapter* adapter) {
  return guard([&] {
    std::lock_guard<std::mutex> lock(hvd::runtime::registry_mutex());
    auto& r = hvd::runtime::registry();
    auto it = std::find_if(r.begin(), r.end(),
                           [&](const auto& a) { return a.get() == adapter; });
    if (it == r.end()) {
      throw hvd::Error(HVD_ERR_INVALID_ARGUMENT,
                       "hvd_unregister_adapter: not a registered adapter");
    }
    int in_flight = adapter->in_flight.load();
    if (in_flight > 0) {
      throw hvd::Error(HVD_ERR_INVALID_ARGUMENT,
                       "hvd_unregister_adapter: adapter '" + adapter->name +
                           "' still has " + std::to_string(in_flight) +
                           " op(s) in flight");
    }
    if (hvd::runtime::background_only(adapter->api)) {
      --hvd::runtime::g_background_only;
    }
    r.erase(it);
    return HVD_OK;
  });
}

}  // extern "C"
