#include "fabric_info.h"

#include <rdma/fabric.h>

#include <set>
#include <string>

namespace hvd_ofi {
namespace {

std::string probe() {
  uint32_t version = fi_version();
  std::string text = "libfabric " + std::to_string(FI_MAJOR(version)) + "." +
                     std::to_string(FI_MINOR(version));
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) return text;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED;
  fi_info* info = nullptr;
  int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  if (rc != 0) {
    return text + "; no provider with FI_EP_RDM and FI_TAGGED (" +
           fi_strerror(-rc) + ")";
  }
  std::set<std::string> seen;
  std::string providers;
  for (fi_info* i = info; i != nullptr; i = i->next) {
    if (!i->fabric_attr || !i->fabric_attr->prov_name) continue;
    if (!seen.insert(i->fabric_attr->prov_name).second) continue;
    providers += (providers.empty() ? "" : ", ") +
                 std::string(i->fabric_attr->prov_name);
  }
  fi_freeinfo(info);
  return text + "; providers: " + providers;
}

}  // namespace

const char* describe_fabric() {
  static const std::string text = probe();
  return text.c_str();
}

}  // namespace hvd_ofi
