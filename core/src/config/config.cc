#include "config/config.h"

#include <cstdio>

#include "common/error.h"
#include "config/environment.h"
#include "config/file_reader.h"
#include "config/impl.h"
#include "config/schema.h"
#include "config/search.h"
#include "config/toml_values.h"

namespace hvd {

void throw_config_error(const std::string& where, const std::string& key,
                        const std::string& what) {
  throw Error(HVD_ERR_CONFIG, where + ": key '" + key + "': " + what);
}

PluginTable& Config::Impl::plugin(const std::string& table,
                                  const std::string& source) {
  auto it = plugins.find(table);
  if (it == plugins.end()) {
    it = plugins.emplace(table, std::make_unique<PluginTable>(table, source))
             .first;
  }
  return *it->second;
}

namespace {

// The schema's defaults, read once through the same conversion as a file.
const std::map<std::string, Setting>& default_settings() {
  static const std::map<std::string, Setting> defaults = [] {
    std::map<std::string, Setting> out;
    for (const KeySpec& spec : schema()) {
      if (spec.plugin) continue;
      std::string key(spec.key);
      try {
        toml::table t = toml::parse("v = " + std::string(spec.default_toml),
                                    "<default of " + key + ">");
        Value value;
        std::string error = value_from_toml(*t.get("v"), spec, &value);
        if (!error.empty()) throw Error(HVD_ERR_INTERNAL, error);
        out.emplace(key, Setting{std::move(value), "default"});
      } catch (const std::exception& e) {
        throw Error(HVD_ERR_INTERNAL, "the default of configuration key '" +
                                          key + "' is invalid: " + e.what());
      }
    }
    return out;
  }();
  return defaults;
}

std::shared_ptr<Config::Impl> defaults_only() {
  auto impl = std::make_shared<Config::Impl>();
  impl->settings = default_settings();
  return impl;
}

const Setting& setting_of(const Config::Impl& impl, const std::string& key,
                          std::initializer_list<ValueType> types,
                          const char* getter) {
  const KeySpec* spec = find_key(key);
  auto it = impl.settings.find(key);
  if (!spec || spec->plugin || it == impl.settings.end()) {
    throw Error(HVD_ERR_INTERNAL,
                "configuration key '" + key + "' is not in the schema");
  }
  for (ValueType type : types)
    if (spec->type == type) return it->second;
  throw Error(HVD_ERR_INTERNAL, "configuration key '" + key + "' holds " +
                                    describe_type(spec->type) +
                                    "; it is not read with " + getter);
}

// The plugin value `key` ("interfaces" or "interfaces[1]") of a table.
const PluginValue* find_plugin_value(const PluginTable& table,
                                     const std::string& key) {
  auto it = table.values().find(key);
  if (it != table.values().end()) return &it->second;
  for (const auto& [k, value] : table.values())
    for (const PluginValue& item : value.items)
      if (item.key == key) return &item;
  return nullptr;
}

// toml++ 3.3 (Debian 12's libtomlplusplus-dev) reaches
// __builtin_unreachable() when it asks whether some non-ASCII code points
// are whitespace, which it does for such a character where a key or value
// should be (found by tests/fuzz; corpus/config/regression-*). TOML allows
// non-ASCII only inside strings and comments, so any other is refused, with
// its place, before the text reaches the parser.
void refuse_what_the_parser_mishandles(const std::string& text,
                                       const std::string& path) {
  enum class In { kCode, kBasic, kLiteral, kMultiBasic, kMultiLiteral };
  In in = In::kCode;
  size_t line = 1, column = 0;
  auto at = [&](size_t i, const char* s) { return text.compare(i, 3, s) == 0; };
  // A byte-order mark may open the file; the parser skips it.
  for (size_t i = at(0, "\xEF\xBB\xBF") ? 3 : 0; i < text.size(); ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    if ((byte & 0xC0) != 0x80) ++column;  // not a continuation byte
    if (byte == '\n') {
      ++line;
      column = 0;
      if (in == In::kBasic || in == In::kLiteral) in = In::kCode;
      continue;
    }
    switch (in) {
      case In::kCode:
        if (byte == '#') {
          while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        } else if (at(i, "\"\"\"")) {
          in = In::kMultiBasic, i += 2, column += 2;
        } else if (at(i, "'''")) {
          in = In::kMultiLiteral, i += 2, column += 2;
        } else if (byte == '"') {
          in = In::kBasic;
        } else if (byte == '\'') {
          in = In::kLiteral;
        } else if (byte >= 0x80) {
          uint32_t code = 0;
          size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
          code = length == 1 ? byte : byte & (0x7Fu >> length);
          for (size_t k = 1; k < length && i + k < text.size(); ++k)
            code = code << 6 | (static_cast<unsigned char>(text[i + k]) & 0x3Fu);
          char name[16];
          std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(code));
          throw Error(HVD_ERR_CONFIG, path + ":" + std::to_string(line) + ":" +
                                          std::to_string(column) + ": character " +
                                          name +
                                          " is not supported in horovod.toml "
                                          "outside a string or a comment");
        }
        break;
      case In::kBasic:
      case In::kMultiBasic:
        if (byte == '\\') {
          ++i;
        } else if (in == In::kBasic && byte == '"') {
          in = In::kCode;
        } else if (in == In::kMultiBasic && at(i, "\"\"\"")) {
          in = In::kCode, i += 2, column += 2;
        }
        break;
      case In::kLiteral:
        if (byte == '\'') in = In::kCode;
        break;
      case In::kMultiLiteral:
        if (at(i, "'''")) in = In::kCode, i += 2, column += 2;
        break;
    }
  }
}

// Defaults, then the file's text (if any) as the file `path`, then `env`.
std::shared_ptr<Config::Impl> read_config(const std::string* text,
                                          const std::string& path,
                                          const Environment& env) {
  std::shared_ptr<Config::Impl> impl = defaults_only();
  impl->file = path;
  if (text) {
    refuse_what_the_parser_mishandles(*text, path);
    toml::table root;
    try {
      root = toml::parse(*text, path);
    } catch (const toml::parse_error& e) {
      throw Error(HVD_ERR_CONFIG,
                  where(e.source()) + ": " + std::string(e.description()));
    }
    read_toml(root, *impl);
  }
  apply_environment(env, *impl);
  for (auto& [name, table] : impl->plugins) table->freeze();
  return impl;
}

}  // namespace

Config::Config() : impl_(defaults_only()) {}

Config Config::load(const ConfigLoadOptions& options) {
  Environment process_env;
  const Environment* env = options.environment;
  if (!env) {
    process_env = process_environment();
    env = &process_env;
  }
  ConfigLocation location = locate_config(options, *env);
  std::string text;
  if (!location.path.empty()) text = read_config_file(location.path);
  auto impl = read_config(location.path.empty() ? nullptr : &text,
                          location.path, *env);
  impl->searched = location.searched;
  Config config;
  config.impl_ = std::move(impl);
  return config;
}

Config Config::from_text(const std::string& text, const std::string& path,
                         const std::map<std::string, std::string>& env) {
  Config config;
  config.impl_ = read_config(&text, path, env);
  return config;
}

const std::string& Config::file() const { return impl_->file; }
const std::vector<std::string>& Config::searched() const {
  return impl_->searched;
}

bool Config::get_bool(const std::string& key) const {
  return std::get<bool>(
      setting_of(*impl_, key, {ValueType::Bool}, "get_bool").value);
}

int64_t Config::get_int(const std::string& key) const {
  return std::get<int64_t>(
      setting_of(*impl_, key, {ValueType::Int}, "get_int").value);
}

double Config::get_float(const std::string& key) const {
  return static_cast<double>(std::get<int64_t>(
      setting_of(*impl_, key, {ValueType::Int}, "get_float").value));
}

std::string Config::get_string(const std::string& key) const {
  const Value& value =
      setting_of(*impl_, key, {ValueType::String, ValueType::Names},
                 "get_string")
          .value;
  // A list of names reads as its first choice.
  if (auto* names = std::get_if<std::vector<std::string>>(&value))
    return names->front();
  return std::get<std::string>(value);
}

std::vector<std::string> Config::get_strings(const std::string& key) const {
  return std::get<std::vector<std::string>>(
      setting_of(*impl_, key, {ValueType::Strings, ValueType::Names},
                 "get_strings")
          .value);
}

uint64_t Config::get_bytes(const std::string& key) const {
  return std::get<uint64_t>(
      setting_of(*impl_, key, {ValueType::Bytes}, "get_bytes").value);
}

std::chrono::nanoseconds Config::get_duration(const std::string& key) const {
  return std::get<std::chrono::nanoseconds>(
      setting_of(*impl_, key, {ValueType::Duration}, "get_duration").value);
}

std::string Config::source(const std::string& key) const {
  auto it = impl_->settings.find(key);
  if (it != impl_->settings.end()) return it->second.source;
  for (const auto& [name, table] : impl_->plugins) {
    if (key.size() > name.size() && key.compare(0, name.size(), name) == 0 &&
        key[name.size()] == '.') {
      if (const PluginValue* value =
              find_plugin_value(*table, key.substr(name.size() + 1)))
        return value->source;
    }
  }
  throw Error(HVD_ERR_INTERNAL,
              "configuration key '" + key + "' is not set anywhere");
}

std::vector<ReducerRule> Config::rules(hvd_collective collective) const {
  if (collective < 0 || collective >= HVD_COLL_COUNT) return {};
  return impl_->rules[collective];
}

const hvd_config_table* Config::plugin_table(const std::string& kind,
                                             const std::string& name) const {
  std::string table = kind + "." + name;
  auto it = impl_->plugins.find(table);
  if (it != impl_->plugins.end()) return it->second->view();
  std::lock_guard<std::mutex> lock(impl_->empty_mutex);
  auto& empty = impl_->empty_tables[table];
  if (!empty) {
    empty = std::make_unique<PluginTable>(table, "");
    empty->freeze();
  }
  return empty->view();
}

std::string Config::plugin_key_error(const std::string& kind,
                                     const std::string& name,
                                     const std::string& key,
                                     const std::string& message) const {
  std::string table = kind + "." + name;
  std::string full = table + "." + key;
  auto it = impl_->plugins.find(table);
  if (it != impl_->plugins.end()) {
    if (const PluginValue* value = find_plugin_value(*it->second, key))
      return value->source + ": key '" + full + "': " + message;
    if (!it->second->source().empty()) {
      return it->second->source() + ": key '" + full + "' (in [" + table +
             "]): " + message;
    }
  }
  std::string where = impl_->file.empty() ? "configuration" : impl_->file;
  return where + ": key '" + full + "' (no [" + table + "] table): " + message;
}

}  // namespace hvd
