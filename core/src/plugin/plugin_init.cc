// Creating plugin instances, with failures that say whose they are.
#include "common/error.h"
#include "plugin/loader.h"

namespace hvd {
namespace {

// "transport 'tcp' (/p/lib/horovod/libhorovod-transport-tcp.so): init
// failed (configuration error): <the plugin's message>"
[[noreturn]] void init_failed(const Plugin& plugin, hvd_status status,
                              const char* message) {
  std::string text = plugin.describe() + ": init failed";
  if (status != HVD_OK) text += std::string(" (") + status_name(status) + ")";
  text += ": ";
  text += message != nullptr && message[0] != '\0'
              ? message
              : "the plugin gave no message";
  throw Error(status < 0 ? status : HVD_ERR_INTERNAL, text);
}

}  // namespace

hvd_transport* init_transport(const Plugin& plugin, const hvd_host* host) {
  const hvd_transport_api& api = plugin.transport();
  hvd_transport* transport = nullptr;
  hvd_status status = api.init(host, &transport);
  if (status != HVD_OK) init_failed(plugin, status, api.last_error(nullptr));
  if (transport == nullptr) {
    init_failed(plugin, status, "init returned success but no transport");
  }
  return transport;
}

hvd_reducer* init_reducer(const Plugin& plugin, const hvd_host* host) {
  const hvd_reducer_api& api = plugin.reducer();
  hvd_reducer* reducer = nullptr;
  hvd_status status = api.init(host, &reducer);
  if (status != HVD_OK) init_failed(plugin, status, api.last_error(nullptr));
  if (reducer == nullptr) {
    init_failed(plugin, status, "init returned success but no reducer");
  }
  return reducer;
}

}  // namespace hvd
