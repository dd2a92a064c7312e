#include "config/toml_values.h"

#include <sstream>

#include "config/config.h"
#include "config/impl.h"

namespace hvd {

std::string where(const toml::source_region& region) {
  std::string file = region.path ? *region.path : std::string("<config>");
  return file + ":" + std::to_string(region.begin.line) + ":" +
         std::to_string(region.begin.column);
}

std::string toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "the string " + toml_quote(node.as_string()->get());
    case toml::node_type::integer:
      return "the integer " + std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

namespace {

std::string expected(const KeySpec& spec, const toml::node& node) {
  return "expected " + std::string(describe_type(spec.type)) + ", got " +
         toml_type_name(node);
}

std::string strings_from(const toml::node& node, const KeySpec& spec,
                         std::vector<std::string>* out) {
  const toml::array* array = node.as_array();
  if (!array) return expected(spec, node);
  out->clear();
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& item = *array->get(i);
    if (!item.is_string()) {
      return "expected " + std::string(describe_type(spec.type)) +
             ", but element " + std::to_string(i) + " is " +
             toml_type_name(item);
    }
    out->push_back(item.as_string()->get());
  }
  return "";
}

std::string names_from(const toml::node& node, const KeySpec& spec,
                       std::vector<std::string>* out) {
  if (node.is_string()) {
    *out = {node.as_string()->get()};
  } else {
    std::string error = strings_from(node, spec, out);
    if (!error.empty()) return error;
    if (out->empty()) return "the list of names is empty";
  }
  for (const std::string& name : *out)
    if (name.empty()) return "a plugin name is empty";
  return "";
}

}  // namespace

std::string value_from_toml(const toml::node& node, const KeySpec& spec,
                            Value* out) {
  switch (spec.type) {
    case ValueType::Bool:
      if (!node.is_boolean()) return expected(spec, node);
      *out = node.as_boolean()->get();
      return "";
    case ValueType::Int:
      if (!node.is_integer() || node.as_integer()->get() < 0)
        return expected(spec, node);
      *out = node.as_integer()->get();
      return "";
    case ValueType::String: {
      if (!node.is_string()) return expected(spec, node);
      std::string text = node.as_string()->get();
      std::string error = check_choice(spec, &text);
      if (!error.empty()) return error;
      *out = text;
      return "";
    }
    case ValueType::Strings: {
      std::vector<std::string> list;
      std::string error = strings_from(node, spec, &list);
      if (!error.empty()) return error;
      *out = list;
      return "";
    }
    case ValueType::Names: {
      std::vector<std::string> list;
      std::string error = names_from(node, spec, &list);
      if (!error.empty()) return error;
      *out = list;
      return "";
    }
    case ValueType::Bytes: {
      uint64_t bytes = 0;
      if (node.is_integer() && node.as_integer()->get() >= 0) {
        bytes = static_cast<uint64_t>(node.as_integer()->get());
      } else if (!node.is_string() ||
                 !parse_bytes(node.as_string()->get(), &bytes)) {
        return expected(spec, node);
      }
      *out = bytes;
      return "";
    }
    case ValueType::Duration: {
      std::chrono::nanoseconds duration{};
      if (node.is_integer() && node.as_integer()->get() >= 0 &&
          node.as_integer()->get() <= INT64_MAX / 1000000000) {
        duration = std::chrono::seconds(node.as_integer()->get());
      } else if (node.is_floating_point() &&
                 node.as_floating_point()->get() >= 0 &&
                 node.as_floating_point()->get() < 9e9) {
        duration = std::chrono::nanoseconds(
            static_cast<int64_t>(node.as_floating_point()->get() * 1e9 + 0.5));
      } else if (!node.is_string() ||
                 !parse_duration(node.as_string()->get(), &duration)) {
        return expected(spec, node);
      }
      *out = duration;
      return "";
    }
  }
  return "unsupported type";
}

namespace {

PluginValue plugin_value(const toml::node& node, const std::string& table,
                         const std::string& key, const std::string& source) {
  PluginValue value;
  value.key = key;
  value.source = source;
  switch (node.type()) {
    case toml::node_type::boolean:
      value.type = HVD_VALUE_BOOL;
      value.bool_value = node.as_boolean()->get();
      break;
    case toml::node_type::integer:
      value.type = HVD_VALUE_INT;
      value.int_value = node.as_integer()->get();
      break;
    case toml::node_type::floating_point:
      value.type = HVD_VALUE_FLOAT;
      value.float_value = node.as_floating_point()->get();
      break;
    case toml::node_type::string:
      value.type = HVD_VALUE_STRING;
      value.string_value = node.as_string()->get();
      break;
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time: {
      // Plugins get dates and times as their TOML text.
      std::ostringstream text;
      if (node.is_date()) text << *node.as_date();
      if (node.is_time()) text << *node.as_time();
      if (node.is_date_time()) text << *node.as_date_time();
      value.type = HVD_VALUE_STRING;
      value.string_value = text.str();
      break;
    }
    case toml::node_type::array: {
      value.type = HVD_VALUE_ARRAY;
      const toml::array& array = *node.as_array();
      for (size_t i = 0; i < array.size(); ++i) {
        const toml::node& item = *array.get(i);
        std::string item_key = key + "[" + std::to_string(i) + "]";
        if (item.is_table()) {
          throw_config_error(where(item.source()), table + "." + item_key,
                             "a plugin's table cannot hold tables inside "
                             "arrays");
        }
        value.items.push_back(
            plugin_value(item, table, item_key, where(item.source())));
      }
      break;
    }
    default:
      throw_config_error(source, table + "." + key, "unsupported value");
  }
  return value;
}

}  // namespace

void add_plugin_values(const toml::node& node, const std::string& prefix,
                       const std::string& source, PluginTable& table) {
  if (const toml::table* t = node.as_table()) {
    for (auto&& [k, v] : *t) {
      std::string key = prefix.empty() ? std::string(k.str())
                                       : prefix + "." + std::string(k.str());
      add_plugin_values(v, key, where(k.source()), table);
    }
    return;
  }
  table.set(plugin_value(node, table.name(), prefix, source));
}

}  // namespace hvd
