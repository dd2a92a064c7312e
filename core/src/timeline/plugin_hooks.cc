#include "timeline/plugin_hooks.h"

namespace hvd::timeline {

void PluginHooks::begin(const std::string& row, const std::string& phase) {
  if (!timeline_.on()) return;
  const char* name = timeline_.intern(phase)->c_str();
  if (!row.empty()) {
    timeline_.begin(timeline_.intern(row), name);
    return;
  }
  if (const auto* rows = timeline_.task_rows()) {
    for (const std::string* r : *rows) timeline_.begin(r, name);
  }
}

void PluginHooks::end(const std::string& row, const std::string&) {
  if (!timeline_.on()) return;
  if (!row.empty()) {
    timeline_.end(timeline_.intern(row));
    return;
  }
  if (const auto* rows = timeline_.task_rows()) {
    for (const std::string* r : *rows) timeline_.end(r);
  }
}

}  // namespace hvd::timeline
