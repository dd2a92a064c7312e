// A plugin's own table ([transport.ofi]), flattened to dotted keys, and the
// C view of it (hvd_config_table) handed to the plugin.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "horovod/host.h"

namespace hvd {

struct PluginValue {
  hvd_value_type type = HVD_VALUE_STRING;
  bool bool_value = false;
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;
  std::vector<PluginValue> items;  // HVD_VALUE_ARRAY
  std::string key;     // dotted path inside the plugin's table; "k[1]" items
  std::string source;  // "file:line:column" or "HOROVOD_X"
};

// The value as TOML text, for entries() and canonical().
std::string plugin_value_text(const PluginValue& value);

class PluginTable {
 public:
  // name: "transport.ofi"; source: where the table was opened, "" if the
  // file has none (an environment variable filled it).
  PluginTable(std::string name, std::string source);
  PluginTable(const PluginTable&) = delete;
  PluginTable& operator=(const PluginTable&) = delete;

  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }
  const std::map<std::string, PluginValue>& values() const { return values_; }

  // Adds or replaces a value; only before freeze().
  void set(PluginValue value);
  // Builds the C view; the table must not change afterwards.
  void freeze();
  const hvd_config_table* view() const { return &view_; }

 private:
  hvd_config_value to_c(const PluginValue& value);

  std::string name_, source_;
  std::map<std::string, PluginValue> values_;
  std::deque<std::vector<hvd_config_value>> arrays_;  // stable storage
  hvd_config_table view_{};
};

}  // namespace hvd
