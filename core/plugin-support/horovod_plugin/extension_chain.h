// The chain behind a transport table's `ext`: what horovod-info shows of the
// plugin (HVD_EXT_PLUGIN_INFO) and its native collectives
// (HVD_EXT_TRANSPORT_COLLECTIVES), each optional. A plugin names only its
// describe function and its collectives table; the chain keeps copies
// linked to each other, so it must live as long as the plugin (a static).
// TransportTable::api() keeps one; a plugin that writes its own table
// declares one at namespace scope:
//
//   hvd_plugin::ExtensionChain extensions;
//   api.ext = extensions.link({describe, &kCollectives});
#pragma once

#include "horovod/abi.h"
#include "horovod/transport.h"

namespace hvd_plugin {

struct TransportExtensions {
  // Returns the plugin's text for horovod-info (ABI 1.1's hvd_plugin_info).
  const char* (*describe)() = nullptr;
  // Copied; the copy's `next` is set by the chain.
  const hvd_transport_collectives* collectives = nullptr;
};

class ExtensionChain {
 public:
  // The head of the chain (NULL when `e` names nothing). Called once, when
  // the plugin's table is made.
  const hvd_extension* link(const TransportExtensions& e) {
    const hvd_extension* head = nullptr;
    if (e.describe != nullptr) {
      info_ = {sizeof(hvd_plugin_info), HVD_EXT_PLUGIN_INFO, nullptr,
               e.describe};
      head = reinterpret_cast<const hvd_extension*>(&info_);
    }
    if (e.collectives != nullptr) {
      collectives_ = *e.collectives;
      collectives_.next = head;
      head = reinterpret_cast<const hvd_extension*>(&collectives_);
    }
    return head;
  }

 private:
  hvd_plugin_info info_{};
  hvd_transport_collectives collectives_{};
};

}  // namespace hvd_plugin
