#include "config/file_reader.h"

#include "config/schema.h"
#include "config/suggest.h"
#include "config/toml_values.h"

namespace hvd {
namespace {

// Everything a misspelt key might have meant.
std::vector<std::string> known_names() {
  std::vector<std::string> names;
  for (const SectionSpec& s : sections()) names.emplace_back(s.name);
  for (const KeySpec& k : schema())
    if (!k.plugin) names.emplace_back(k.key);
  for (const CollectiveSpec& c : rule_collectives()) {
    names.emplace_back(c.name);
    names.push_back(std::string(c.name) + ".rules");
  }
  return names;
}

[[noreturn]] void unknown_key(const toml::key& key, const std::string& full,
                              const std::string& hint = "") {
  throw_config_error(where(key.source()), full,
                     "unknown key" + did_you_mean(full, known_names()) + hint);
}

const toml::table& expect_table(const toml::node& node,
                                const std::string& full) {
  if (!node.is_table()) {
    throw_config_error(where(node.source()), full,
                       "expected a table, got " + toml_type_name(node));
  }
  return *node.as_table();
}

void read_section(const SectionSpec& section, const toml::node& node,
                  Config::Impl& impl) {
  const std::string name(section.name);
  for (auto&& [k, v] : expect_table(node, name)) {
    std::string full = name + "." + std::string(k.str());
    const KeySpec* spec = find_key(full);
    if (spec && !spec->plugin) {
      Value value;
      std::string error = value_from_toml(v, *spec, &value);
      if (!error.empty()) throw_config_error(where(v.source()), full, error);
      impl.settings[full] = Setting{std::move(value), where(k.source())};
    } else if (section.plugin_tables && v.is_table()) {
      PluginTable& table = impl.plugin(full, where(v.source()));
      add_plugin_values(v, "", where(v.source()), table);
    } else {
      unknown_key(k, full,
                  section.plugin_tables
                      ? "; a plugin's settings go in its own table, [" + name +
                            ".<plugin>]"
                      : "");
    }
  }
}

Value rule_value(const toml::node& node, const std::string& key,
                 ValueType type) {
  KeySpec spec{key, type, "", "", EnvForm::Native, true, false, "", ""};
  Value value;
  std::string error = value_from_toml(node, spec, &value);
  if (!error.empty()) throw_config_error(where(node.source()), key, error);
  return value;
}

ReducerRule read_rule(const toml::node& node, const std::string& prefix) {
  if (!node.is_table()) {
    throw_config_error(where(node.source()), prefix,
                       "expected a table ([[" +
                           prefix.substr(0, prefix.rfind('[')) + "]]), got " +
                           toml_type_name(node));
  }
  static const std::vector<std::string> rule_keys = {"min_bytes", "max_bytes",
                                                     "reducer"};
  ReducerRule rule;
  rule.source = where(node.source());
  bool has_reducer = false;
  for (auto&& [k, v] : *node.as_table()) {
    std::string leaf(k.str());
    std::string full = prefix + "." + leaf;
    if (leaf == "min_bytes") {
      rule.min_bytes =
          std::get<uint64_t>(rule_value(v, full, ValueType::Bytes));
    } else if (leaf == "max_bytes") {
      rule.max_bytes =
          std::get<uint64_t>(rule_value(v, full, ValueType::Bytes));
    } else if (leaf == "reducer") {
      rule.reducer =
          std::get<std::string>(rule_value(v, full, ValueType::String));
      if (rule.reducer.empty())
        throw_config_error(where(v.source()), full,
                           "the reducer name is empty");
      has_reducer = true;
    } else {
      std::vector<std::string> candidates;
      for (const std::string& r : rule_keys)
        candidates.push_back(prefix + "." + r);
      throw_config_error(where(k.source()), full,
                         "unknown key" + did_you_mean(full, candidates) +
                             "; a rule has min_bytes, max_bytes and reducer");
    }
  }
  if (!has_reducer) {
    throw_config_error(rule.source, prefix + ".reducer",
                       "a rule needs a reducer");
  }
  if (rule.min_bytes >= rule.max_bytes) {
    throw_config_error(rule.source, prefix + ".min_bytes",
                       "min_bytes (" + std::to_string(rule.min_bytes) +
                           ") must be less than max_bytes (" +
                           std::to_string(rule.max_bytes) + ")");
  }
  return rule;
}

void read_rules(const CollectiveSpec& collective, const toml::node& node,
                Config::Impl& impl) {
  const std::string name(collective.name);
  for (auto&& [k, v] : expect_table(node, name)) {
    std::string full = name + "." + std::string(k.str());
    if (k.str() != "rules") {
      std::string suggestion = did_you_mean(full, {name + ".rules"});
      throw_config_error(where(k.source()), full,
                         "unknown key" + suggestion + "; [" + name +
                             "] holds only [[" + name + ".rules]]");
    }
    const toml::array* array = v.as_array();
    if (!array) {
      throw_config_error(where(v.source()), full,
                         "expected an array of tables ([[" + full +
                             "]]), got " + toml_type_name(v));
    }
    auto& rules = impl.rules[collective.collective];
    for (size_t i = 0; i < array->size(); ++i) {
      rules.push_back(
          read_rule(*array->get(i), full + "[" + std::to_string(i) + "]"));
    }
  }
}

}  // namespace

void read_toml(const toml::table& root, Config::Impl& impl) {
  for (auto&& [k, v] : root) {
    std::string name(k.str());
    if (const SectionSpec* section = find_section(name)) {
      read_section(*section, v, impl);
    } else if (const CollectiveSpec* collective = find_rule_collective(name)) {
      read_rules(*collective, v, impl);
    } else {
      unknown_key(k, name);
    }
  }
}

}  // namespace hvd
