#include "json_writer.h"

#include <cstdio>

namespace hvd::info {

void JsonWriter::newline() {
  out_ << "\n";
  for (size_t i = 0; i < has_element_.size(); ++i) out_ << "  ";
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (has_element_.empty()) return;
  if (has_element_.back()) out_ << ",";
  has_element_.back() = true;
  newline();
}

void JsonWriter::key(std::string_view name) {
  before_value();
  quoted(name);
  out_ << ": ";
  after_key_ = true;
}

void JsonWriter::open(char bracket) {
  before_value();
  out_ << bracket;
  has_element_.push_back(false);
}

void JsonWriter::close(char bracket) {
  bool had = has_element_.back();
  has_element_.pop_back();
  if (had) newline();
  out_ << bracket;
}

void JsonWriter::value(std::string_view text) {
  before_value();
  quoted(text);
}

void JsonWriter::value(bool b) {
  before_value();
  out_ << (b ? "true" : "false");
}

void JsonWriter::value(int64_t n) {
  before_value();
  out_ << n;
}

void JsonWriter::quoted(std::string_view text) {
  out_ << '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out_ << "\\\"";
        break;
      case '\\':
        out_ << "\\\\";
        break;
      case '\n':
        out_ << "\\n";
        break;
      case '\r':
        out_ << "\\r";
        break;
      case '\t':
        out_ << "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          out_ << buf;
        } else {
          out_ << static_cast<char>(c);
        }
    }
  }
  out_ << '"';
}

}  // namespace hvd::info
