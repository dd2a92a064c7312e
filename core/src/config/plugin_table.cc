#include "config/plugin_table.h"

#include <cmath>
#include <cstdio>

#include "config/value.h"

namespace hvd {

std::string plugin_value_text(const PluginValue& value) {
  switch (value.type) {
    case HVD_VALUE_BOOL:
      return value.bool_value ? "true" : "false";
    case HVD_VALUE_INT:
      return std::to_string(value.int_value);
    case HVD_VALUE_FLOAT: {
      if (std::isnan(value.float_value)) return "nan";
      if (std::isinf(value.float_value))
        return value.float_value > 0 ? "inf" : "-inf";
      char buf[32];
      snprintf(buf, sizeof buf, "%.17g", value.float_value);
      std::string text(buf);
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      return text;
    }
    case HVD_VALUE_STRING:
      return toml_quote(value.string_value);
    case HVD_VALUE_ARRAY: {
      std::string out = "[";
      for (size_t i = 0; i < value.items.size(); ++i) {
        if (i) out += ", ";
        out += plugin_value_text(value.items[i]);
      }
      return out + "]";
    }
  }
  return "?";
}

PluginTable::PluginTable(std::string name, std::string source)
    : name_(std::move(name)), source_(std::move(source)) {}

void PluginTable::set(PluginValue value) {
  std::string key = value.key;
  values_.insert_or_assign(std::move(key), std::move(value));
}

hvd_config_value PluginTable::to_c(const PluginValue& value) {
  hvd_config_value out{};
  out.struct_size = sizeof(hvd_config_value);
  out.key = value.key.c_str();
  out.type = value.type;
  out.bool_value = value.bool_value ? 1 : 0;
  out.int_value = value.int_value;
  out.float_value = value.float_value;
  out.string_value =
      value.type == HVD_VALUE_STRING ? value.string_value.c_str() : nullptr;
  out.source = value.source.c_str();
  if (value.type == HVD_VALUE_ARRAY) {
    std::vector<hvd_config_value> items;
    for (const PluginValue& item : value.items) items.push_back(to_c(item));
    arrays_.push_back(std::move(items));
    out.items = arrays_.back().data();
    out.item_count = arrays_.back().size();
  }
  return out;
}

void PluginTable::freeze() {
  std::vector<hvd_config_value> top;
  for (const auto& [key, value] : values_) top.push_back(to_c(value));
  arrays_.push_back(std::move(top));
  view_.struct_size = sizeof(hvd_config_table);
  view_.name = name_.c_str();
  view_.values = arrays_.back().data();
  view_.count = arrays_.back().size();
}

}  // namespace hvd
