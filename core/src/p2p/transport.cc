#include "p2p/transport.h"

#include "common/error.h"
#include "common/log.h"
#include "config/config.h"
#include "plugin/host_services.h"
#include "plugin/loader.h"

namespace hvd::p2p {

Transport::Transport(std::string scope, std::string describe,
                     const hvd_transport_api* api, hvd_transport* instance,
                     std::shared_ptr<void> owner)
    : scope_(std::move(scope)),
      name_(api->name ? api->name : "?"),
      describe_(std::move(describe)),
      api_(api),
      instance_(instance),
      owner_(std::move(owner)) {
  props_.struct_size = sizeof(props_);
  hvd_status s = api_->get_properties(instance_, &props_);
  if (s != HVD_OK) {
    std::string message = error("get_properties failed");
    api_->finalize(instance_);
    throw Error(s, message);
  }
  // A [transport] gpu transport carries device memory; every other scope
  // carries host memory (the fusion buffers, staged device tensors).
  const bool gpu = scope_ == "gpu";
  if (!(props_.mem_kinds & HVD_MEM_BIT(gpu ? HVD_MEM_CUDA : HVD_MEM_HOST))) {
    api_->finalize(instance_);
    throw Error(HVD_ERR_UNSUPPORTED,
                describe_ + (gpu ? ": cannot send from CUDA memory"
                                 : ": cannot send from host memory"));
  }
  if (props_.handle_bytes > HVD_TRANSPORT_HANDLE_MAX) {
    api_->finalize(instance_);
    throw Error(HVD_ERR_INTERNAL, describe_ + ": listen handle of " +
                                      std::to_string(props_.handle_bytes) +
                                      " bytes exceeds " +
                                      std::to_string(HVD_TRANSPORT_HANDLE_MAX));
  }
  for (const hvd_extension* e = api_->ext; e != nullptr; e = e->next) {
    if (e->type != HVD_EXT_TRANSPORT_COLLECTIVES) continue;
    auto* c = reinterpret_cast<const hvd_transport_collectives*>(e);
    if (c->struct_size >= HVD_STRUCT_SIZE(hvd_transport_collectives,
                                          comm_abort) &&
        c->comm_create && c->comm_destroy && c->supports) {
      collectives_ = c;
    } else {
      HVD_LOG(WARNING) << describe_
                       << ": ignoring an incomplete collectives extension";
    }
    break;
  }
}

Transport::~Transport() {
  hvd_status s = api_->finalize(instance_);
  if (s != HVD_OK) {
    HVD_LOG(WARNING) << error("finalize failed");
  }
}

std::string Transport::error(const std::string& what) const {
  std::string message = describe_ + ": " + what;
  const char* detail = api_->last_error ? api_->last_error(instance_) : "";
  if (detail && *detail) message += ": " + std::string(detail);
  return message;
}

namespace {

// What a loaded transport keeps alive: the shared object and its host table.
struct Owner {
  std::shared_ptr<Plugin> plugin;
  std::unique_ptr<HostServices> host;
};

}  // namespace

std::unique_ptr<Transport> load_transport(const std::string& scope,
                                          const PluginLoader& loader,
                                          const Config& config,
                                          Bootstrap& bootstrap,
                                          uint64_t epoch) {
  const std::string key = "transport." + scope;
  std::vector<std::string> names = config.get_strings(key);
  if (names.empty()) {
    throw Error(HVD_ERR_CONFIG,
                config.source(key) + ": " + key + " names no transport");
  }
  std::string failures;
  hvd_status first_status = HVD_ERR_NOT_FOUND;
  for (const std::string& name : names) {
    try {
      auto owner = std::make_shared<Owner>();
      owner->plugin = loader.load(HVD_PLUGIN_TRANSPORT, name);
      HostServicesOptions options;
      options.kind = HVD_PLUGIN_TRANSPORT;
      options.name = owner->plugin->header().name;
      options.config = &config;
      options.bootstrap = &bootstrap;
      options.epoch = epoch;
      owner->host = std::make_unique<HostServices>(options);
      const hvd_transport_api& api = owner->plugin->transport();
      hvd_transport* instance =
          init_transport(*owner->plugin, owner->host->table());
      std::string describe = owner->plugin->describe();
      auto transport =
          std::make_unique<Transport>(scope, describe, &api, instance, owner);
      if (!failures.empty()) {
        HVD_LOG(WARNING) << key << ": using '" << name << "' after" << failures;
      }
      HVD_LOG(INFO) << key << ": " << describe;
      return transport;
    } catch (const Error& e) {
      if (failures.empty()) first_status = e.status();
      failures += " '" + name + "' failed: " + e.what() + ";";
    }
  }
  failures.pop_back();
  throw Error(first_status, key + " (" + config.source(key) +
                                "): no transport could be used:" + failures);
}

}  // namespace hvd::p2p
