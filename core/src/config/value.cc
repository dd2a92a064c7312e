#include "config/value.h"

#include <cstdio>

#include "config/units.h"

namespace hvd {

const char* describe_type(ValueType type) {
  switch (type) {
    case ValueType::Bool:
      return "a boolean";
    case ValueType::Int:
      return "a non-negative integer";
    case ValueType::String:
      return "a string";
    case ValueType::Strings:
      return "an array of strings";
    case ValueType::Names:
      return "a string or an array of strings";
    case ValueType::Bytes:
      return "a size (\"64MiB\", \"1GB\" or a number of bytes)";
    case ValueType::Duration:
      return "a duration (\"5s\", \"1ms\", \"250us\" or a number of seconds)";
  }
  return "?";
}

std::string toml_quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

namespace {

struct TextOf {
  std::string operator()(bool b) const { return b ? "true" : "false"; }
  std::string operator()(int64_t i) const { return std::to_string(i); }
  std::string operator()(const std::string& s) const { return toml_quote(s); }
  std::string operator()(const std::vector<std::string>& list) const {
    std::string out = "[";
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) out += ", ";
      out += toml_quote(list[i]);
    }
    return out + "]";
  }
  std::string operator()(uint64_t bytes) const {
    std::string text = format_bytes(bytes);
    // Whole KiB and up read as a size string; the rest stays a number.
    return text.back() == 'B' ? toml_quote(text) : text;
  }
  std::string operator()(std::chrono::nanoseconds d) const {
    return toml_quote(format_duration(d));
  }
};

}  // namespace

std::string toml_text(const Value& value) {
  return std::visit(TextOf{}, value);
}

}  // namespace hvd
