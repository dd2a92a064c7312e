#include "fabric_info.h"

#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace hvd_ucx {
namespace {

// The "tl/device" names of the resource lines ucp_context_print_info writes
// ("#      resource 1  :  md 1  dev 1  flags -- tcp/eth0").
std::string resources(ucp_context_h context) {
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return "";
  ucp_context_print_info(context, stream);
  std::fclose(stream);
  std::istringstream lines(std::string(text, size));
  std::free(text);
  std::string out, line;
  while (std::getline(lines, line)) {
    if (line.find("resource") == std::string::npos) continue;
    size_t at = line.find_last_of(' ');
    if (at == std::string::npos || at + 1 >= line.size()) continue;
    out += (out.empty() ? "" : ", ") + line.substr(at + 1);
  }
  return out;
}

std::string probe() {
  std::string text = std::string("UCX ") + ucp_get_version_string();
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) {
    return text + "; cannot read the UCX configuration";
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h context = nullptr;
  ucs_status_t st = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (st != UCS_OK) {
    return text + "; ucp_init failed: " + ucs_status_string(st);
  }
  std::string found = resources(context);
  ucp_cleanup(context);
  return text + "; transports: " + (found.empty() ? "none" : found);
}

}  // namespace

const char* describe_fabric() {
  static const std::string text = probe();
  return text.c_str();
}

}  // namespace hvd_ucx
