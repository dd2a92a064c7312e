// Reading TOML++ nodes into schema values and plugin values.
#pragma once

#include <string>

#include "config/plugin_table.h"
#include "config/schema.h"
#include "config/toml_api.h"
#include "config/value.h"

namespace hvd {

// "FILE:LINE:COL" of a TOML++ region.
std::string where(const toml::source_region& region);

// "a string", "an integer", "a table", ...
std::string toml_type_name(const toml::node& node);

// Converts `node` to the value `spec` wants. Returns "" or what is wrong.
std::string value_from_toml(const toml::node& node, const KeySpec& spec,
                            Value* out);

// Adds every value under `node` (a plugin's table, or a value inside it at
// `prefix`) to `table`, nested tables flattened to dotted keys. Throws
// HVD_ERR_CONFIG for what a plugin cannot be given (a table inside an
// array).
void add_plugin_values(const toml::node& node, const std::string& prefix,
                       const std::string& source, PluginTable& table);

}  // namespace hvd
