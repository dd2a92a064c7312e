#include "common/error.h"

#include "horovod_plugin/status_text.h"

namespace hvd {

const char* status_name(hvd_status status) {
  return hvd_plugin::status_text(status);
}

namespace {
thread_local std::string g_last_error;
}

void set_last_error(const std::string& message) { g_last_error = message; }
void clear_last_error() {
  if (!g_last_error.empty()) g_last_error.clear();
}
const char* last_error() { return g_last_error.c_str(); }

}  // namespace hvd
