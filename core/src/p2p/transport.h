// One initialised transport plugin instance, as the point-to-point layer
// drives it: its table, its instance, its properties, and how to word its
// failures ("transport 'tcp' (/p/libhorovod-transport-tcp.so): connect to
// rank 3: <the plugin's last_error>").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "horovod/transport.h"
#include "plugin/abi_minors.h"

namespace hvd {
class Bootstrap;
class Config;
class HostServices;
class Plugin;
class PluginLoader;
}  // namespace hvd

namespace hvd::p2p {

class Transport {
 public:
  // Takes an initialised instance (init already called); reads and checks
  // its properties. `owner` keeps the shared object and host table alive.
  Transport(std::string scope, std::string describe,
            const hvd_transport_api* api, hvd_transport* instance,
            std::shared_ptr<void> owner);
  ~Transport();  // finalize
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const std::string& scope() const { return scope_; }  // "intra", "inter"
  const std::string& name() const { return name_; }
  const std::string& describe() const { return describe_; }
  const hvd_transport_api& api() const { return *api_; }
  hvd_transport* instance() const { return instance_; }
  const hvd_transport_properties& properties() const { return props_; }
  bool needs_mr() const { return props_.flags & HVD_TRANSPORT_NEEDS_MR; }
  bool needs_progress() const {
    return props_.flags & HVD_TRANSPORT_NEEDS_PROGRESS;
  }
  // Whether it may run threads of its own (HVD_TRANSPORT_OWN_THREADS). A
  // table built before 1.3 could not say so, and may.
  bool own_threads() const {
    return api_->abi_minor < kMinorOwnThreadsFlag ||
           (props_.flags & HVD_TRANSPORT_OWN_THREADS);
  }
  // Whether it may be called from a thread waiting in hvd_wait, one call at
  // a time (its table's `threading`, abi_minors.h).
  bool any_thread() const { return called_from_any_thread(*api_); }
  // Its collectives extension, when it offers a usable one; else null.
  const hvd_transport_collectives* collectives() const { return collectives_; }

  // "<describe>: <what>: <last_error>" (the last part only when the plugin
  // left a message).
  std::string error(const std::string& what) const;

 private:
  std::string scope_, name_, describe_;
  const hvd_transport_api* api_;
  hvd_transport* instance_;
  hvd_transport_properties props_{};
  const hvd_transport_collectives* collectives_ = nullptr;
  std::shared_ptr<void> owner_;
};

// Loads the transport for `scope` ("intra" or "inter") from the configured
// list transport.<scope>: the first name that loads and initialises wins; a
// fallback taken is logged. Throws hvd::Error naming every candidate and why
// it failed.
std::unique_ptr<Transport> load_transport(const std::string& scope,
                                          const PluginLoader& loader,
                                          const Config& config,
                                          Bootstrap& bootstrap, uint64_t epoch);

}  // namespace hvd::p2p
