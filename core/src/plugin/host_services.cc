#include "plugin/host_services.h"

#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "common/log.h"
#include "config/config.h"
#include "device/device.h"
#include "plugin/loader.h"

namespace hvd {

struct HostServices::Impl {
  HostServicesOptions options;
  std::string kind_name;
  std::string origin;      // log prefix: "transport shm"
  std::string key_prefix;  // bootstrap namespace: "transport.shm/"
  std::string hostname;
  hvd_world world{};
  hvd_host host{};

  static Impl* self(void* ctx) { return static_cast<Impl*>(ctx); }

  // Runs a bootstrap call; a failure becomes its status (logged at debug:
  // a plugin may poll a key with short timeouts on purpose).
  template <typename Body>
  hvd_status bootstrap_call(const char* what, Body&& body) noexcept {
    if (options.bootstrap == nullptr) return HVD_ERR_UNSUPPORTED;
    try {
      return body(*options.bootstrap);
    } catch (const Error& e) {
      log_failure(what, e.what());
      return e.status();
    } catch (const std::bad_alloc&) {
      return HVD_ERR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
      log_failure(what, e.what());
      return HVD_ERR_INTERNAL;
    }
  }

  // log_line writes whatever it is given: the level is checked here.
  void log_failure(const char* what, const char* message) const {
    if (::hvd::log_enabled(HVD_LOG_DEBUG)) {
      log_line(HVD_LOG_DEBUG, origin,
               std::string("bootstrap ") + what + " failed: " + message);
    }
  }

  static int32_t log_enabled(void*, hvd_log_level level) {
    return ::hvd::log_enabled(level) ? 1 : 0;
  }

  static void log(void* ctx, hvd_log_level level, const char* message) {
    try {
      if (::hvd::log_enabled(level)) {
        log_line(level, self(ctx)->origin, message ? message : "");
      }
    } catch (...) {
    }
  }

  static hvd_status config_error(void* ctx, const char* key,
                                 const char* message) {
    Impl* impl = self(ctx);
    try {
      std::string text = impl->options.config->plugin_key_error(
          impl->kind_name, impl->options.name, key ? key : "",
          message ? message : "");
      log_line(HVD_LOG_ERROR, impl->origin, text);
    } catch (...) {
    }
    return HVD_ERR_CONFIG;
  }

  static hvd_status bootstrap_put(void* ctx, const char* key, const void* value,
                                  size_t len) {
    Impl* impl = self(ctx);
    if (key == nullptr || (value == nullptr && len > 0)) {
      return HVD_ERR_INVALID_ARGUMENT;
    }
    return impl->bootstrap_call("put", [&](Bootstrap& bootstrap) {
      const auto* bytes = static_cast<const uint8_t*>(value);
      bootstrap.put(impl->key_prefix + key,
                    std::vector<uint8_t>(bytes, bytes + len));
      return HVD_OK;
    });
  }

  static hvd_status bootstrap_get(void* ctx, int32_t rank, const char* key,
                                  void* value, size_t* len,
                                  int64_t timeout_ms) {
    Impl* impl = self(ctx);
    if (key == nullptr || len == nullptr || (value == nullptr && *len > 0)) {
      return HVD_ERR_INVALID_ARGUMENT;
    }
    // A negative timeout waits without a practical limit.
    std::chrono::milliseconds timeout =
        timeout_ms < 0 ? std::chrono::hours(24)
                       : std::chrono::milliseconds(timeout_ms);
    return impl->bootstrap_call("get", [&](Bootstrap& bootstrap) {
      std::vector<uint8_t> got =
          bootstrap.get(rank, impl->key_prefix + key, timeout);
      size_t room = *len;
      *len = got.size();
      if (got.size() > room) return static_cast<hvd_status>(HVD_ERR_TRUNCATED);
      if (!got.empty()) std::memcpy(value, got.data(), got.size());
      return static_cast<hvd_status>(HVD_OK);
    });
  }

  static hvd_status bootstrap_allgather(void* ctx, const void* mine, size_t len,
                                        void* all) {
    Impl* impl = self(ctx);
    if (len > 0 && (mine == nullptr || all == nullptr)) {
      return HVD_ERR_INVALID_ARGUMENT;
    }
    return impl->bootstrap_call("allgather", [&](Bootstrap& bootstrap) {
      const auto* bytes = static_cast<const uint8_t*>(mine);
      auto gathered =
          bootstrap.allgather(std::vector<uint8_t>(bytes, bytes + len));
      auto* out = static_cast<uint8_t*>(all);
      for (size_t r = 0; r < gathered.size(); ++r) {
        if (gathered[r].size() != len) {
          throw Error(HVD_ERR_MISMATCH,
                      "rank " + std::to_string(r) + " passed " +
                          std::to_string(gathered[r].size()) +
                          " bytes to allgather, this rank " +
                          std::to_string(len),
                      static_cast<int>(r));
        }
        if (len > 0) std::memcpy(out + r * len, gathered[r].data(), len);
      }
      return HVD_OK;
    });
  }

  static hvd_status bootstrap_barrier(void* ctx) {
    return self(ctx)->bootstrap_call("barrier", [](Bootstrap& bootstrap) {
      bootstrap.barrier();
      return HVD_OK;
    });
  }

  static void* mem_alloc(void*, size_t bytes, size_t alignment) {
    if (alignment < alignof(std::max_align_t)) {
      alignment = alignof(std::max_align_t);
    }
    if ((alignment & (alignment - 1)) != 0) return nullptr;
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    if (rounded < bytes) return nullptr;  // overflow
    return std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
  }

  static void mem_free(void*, void* ptr) { std::free(ptr); }

  static void timeline_begin(void* ctx, const char* row, const char* phase) {
    TimelineHooks* sink = self(ctx)->options.timeline;
    if (sink == nullptr) return;
    try {
      sink->begin(row ? row : "", phase ? phase : "");
    } catch (...) {
    }
  }

  static void timeline_end(void* ctx, const char* row, const char* phase) {
    TimelineHooks* sink = self(ctx)->options.timeline;
    if (sink == nullptr) return;
    try {
      sink->end(row ? row : "", phase ? phase : "");
    } catch (...) {
    }
  }

  void fill_world() {
    world.struct_size = sizeof world;
    world.epoch = options.epoch;
    if (options.bootstrap != nullptr) {
      const HostLayout& layout = options.bootstrap->layout();
      world.rank = options.bootstrap->rank();
      world.size = options.bootstrap->size();
      world.local_rank = layout.local_rank;
      world.local_size = layout.local_size;
      world.cross_rank = layout.cross_rank;
      world.cross_size = layout.cross_size;
      hostname = layout.hostname;
    } else {
      world.rank = 0;
      world.size = 1;
      world.local_rank = 0;
      world.local_size = 1;
      world.cross_rank = 0;
      world.cross_size = 1;
    }
    if (hostname.empty()) {
      char name[256] = "";
      gethostname(name, sizeof name - 1);
      hostname = name;
    }
    world.hostname = hostname.c_str();
  }

  void fill_host() {
    host.struct_size = sizeof host;
    host.ext = nullptr;
    host.ctx = this;
    host.abi_major = HVD_ABI_VERSION_MAJOR;
    host.abi_minor = HVD_ABI_VERSION_MINOR;
    host.log_enabled = &Impl::log_enabled;
    host.log = &Impl::log;
    host.config = options.config->plugin_table(kind_name, options.name);
    host.config_error = &Impl::config_error;
    host.world = &world;
    host.bootstrap_put = &Impl::bootstrap_put;
    host.bootstrap_get = &Impl::bootstrap_get;
    host.bootstrap_allgather = &Impl::bootstrap_allgather;
    host.bootstrap_barrier = &Impl::bootstrap_barrier;
    host.mem_alloc = &Impl::mem_alloc;
    host.mem_free = &Impl::mem_free;
    host.device = options.device != nullptr ? options.device : device_api();
    host.timeline_begin = &Impl::timeline_begin;
    host.timeline_end = &Impl::timeline_end;
  }
};

HostServices::HostServices(HostServicesOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (options.config == nullptr) {
    throw Error(HVD_ERR_INTERNAL,
                "host services for " + options.name + " need a configuration");
  }
  impl_->options = std::move(options);
  impl_->kind_name = plugin_kind_name(impl_->options.kind);
  impl_->origin = impl_->kind_name + " " + impl_->options.name;
  impl_->key_prefix = impl_->kind_name + "." + impl_->options.name + "/";
  impl_->fill_world();
  impl_->fill_host();
}

HostServices::~HostServices() = default;

const hvd_host* HostServices::table() const { return &impl_->host; }

}  // namespace hvd
