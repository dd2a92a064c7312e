#include "config/environment.h"

#include <strings.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "config/schema.h"
#include "config/units.h"

extern char** environ;

namespace hvd {
namespace {

std::string trim(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && isspace(static_cast<unsigned char>(text[begin])))
    ++begin;
  while (end > begin && isspace(static_cast<unsigned char>(text[end - 1])))
    --end;
  return text.substr(begin, end - begin);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    std::string part = trim(text.substr(start, end - start));
    if (!part.empty()) parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

bool parse_bool(const std::string& text, bool* out) {
  for (const char* yes : {"1", "true", "yes", "on"}) {
    if (strcasecmp(text.c_str(), yes) == 0) {
      *out = true;
      return true;
    }
  }
  for (const char* no : {"0", "false", "no", "off"}) {
    if (strcasecmp(text.c_str(), no) == 0) {
      *out = false;
      return true;
    }
  }
  return false;
}

bool is_plain_number(const std::string& text) {
  bool digit = false;
  for (char c : text) {
    if (isdigit(static_cast<unsigned char>(c)))
      digit = true;
    else if (c != '.')
      return false;
  }
  return digit;
}

const char* unit_suffix(EnvForm form) {
  switch (form) {
    case EnvForm::Milliseconds:
      return "ms";
    case EnvForm::Microseconds:
      return "us";
    default:
      return "s";
  }
}

// Converts the variable's text; "" or what is wrong.
std::string value_from_env(const KeySpec& spec, const std::string& raw,
                           Value* out) {
  std::string text = trim(raw);
  switch (spec.type) {
    case ValueType::Bool: {
      bool b;
      if (!parse_bool(text, &b)) return "expected 1 or 0 (or true, false)";
      *out = spec.env_form == EnvForm::Inverted ? !b : b;
      return "";
    }
    case ValueType::Int: {
      char* end = nullptr;
      errno = 0;
      long long i = strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno != 0 || i < 0)
        return "expected a non-negative integer";
      *out = static_cast<int64_t>(i);
      return "";
    }
    case ValueType::String: {
      std::string error = check_choice(spec, &text);
      if (!error.empty()) return error;
      *out = text;
      return "";
    }
    case ValueType::Strings:
    case ValueType::Names: {
      char separator = spec.env_form == EnvForm::ColonList ? ':' : ',';
      std::vector<std::string> list = split(text, separator);
      if (spec.type == ValueType::Names) {
        if (list.empty()) return "expected a name or a comma-separated list";
        for (std::string& name : list)
          for (char& c : name)
            c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
      }
      *out = list;
      return "";
    }
    case ValueType::Bytes: {
      uint64_t bytes;
      if (!parse_bytes(text, &bytes))
        return "expected a number of bytes or a size such as \"64MiB\"";
      *out = bytes;
      return "";
    }
    case ValueType::Duration: {
      // A plain number is in the variable's unit; text with a unit is
      // taken as written.
      const char* unit = unit_suffix(spec.env_form);
      std::string with_unit = is_plain_number(text) ? text + unit : text;
      std::chrono::nanoseconds duration;
      if (!parse_duration(with_unit, &duration)) {
        return std::string("expected a number of ") +
               (spec.env_form == EnvForm::Milliseconds   ? "milliseconds"
                : spec.env_form == EnvForm::Microseconds ? "microseconds"
                                                         : "seconds") +
               " or a duration such as \"5s\"";
      }
      *out = duration;
      return "";
    }
  }
  return "unsupported type";
}

PluginValue plugin_value_from(const Value& value, const std::string& key,
                              const std::string& source) {
  PluginValue out;
  out.key = key;
  out.source = source;
  if (auto* list = std::get_if<std::vector<std::string>>(&value)) {
    out.type = HVD_VALUE_ARRAY;
    for (size_t i = 0; i < list->size(); ++i) {
      PluginValue item;
      item.type = HVD_VALUE_STRING;
      item.string_value = (*list)[i];
      item.key = key + "[" + std::to_string(i) + "]";
      item.source = source;
      out.items.push_back(std::move(item));
    }
  } else if (auto* d = std::get_if<std::chrono::nanoseconds>(&value)) {
    out.type = HVD_VALUE_STRING;
    out.string_value = format_duration(*d);
  } else if (auto* b = std::get_if<bool>(&value)) {
    out.type = HVD_VALUE_BOOL;
    out.bool_value = *b;
  } else if (auto* i = std::get_if<int64_t>(&value)) {
    out.type = HVD_VALUE_INT;
    out.int_value = *i;
  } else if (auto* bytes = std::get_if<uint64_t>(&value)) {
    out.type = HVD_VALUE_STRING;
    out.string_value = format_bytes(*bytes);
  } else {
    out.type = HVD_VALUE_STRING;
    out.string_value = std::get<std::string>(value);
  }
  return out;
}

}  // namespace

Environment process_environment() {
  Environment env;
  for (char** p = environ; p && *p; ++p) {
    const char* eq = strchr(*p, '=');
    if (eq) env.emplace(std::string(*p, static_cast<size_t>(eq - *p)), eq + 1);
  }
  return env;
}

void apply_environment(const Environment& env, Config::Impl& impl) {
  for (const KeySpec& spec : schema()) {
    if (spec.env.empty()) continue;
    auto it = env.find(std::string(spec.env));
    if (it == env.end() || trim(it->second).empty()) continue;
    const std::string variable(spec.env);
    Value value;
    std::string error = value_from_env(spec, it->second, &value);
    if (!error.empty()) {
      throw_config_error(variable + "=" + toml_quote(it->second),
                         std::string(spec.key), error);
    }
    if (!spec.plugin) {
      impl.settings[std::string(spec.key)] =
          Setting{std::move(value), variable};
      continue;
    }
    // "transport.gloo.timeout": table "transport.gloo", key "timeout".
    std::string key(spec.key);
    size_t second_dot = key.find('.', key.find('.') + 1);
    PluginTable& table = impl.plugin(key.substr(0, second_dot), "");
    table.set(plugin_value_from(value, key.substr(second_dot + 1), variable));
  }
}

}  // namespace hvd
