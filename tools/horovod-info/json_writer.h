// A small streaming JSON writer for --json: objects, arrays, strings,
// numbers and booleans, indented two spaces.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace hvd::info {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}
  ~JsonWriter() { out_ << "\n"; }

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  // The next value's name inside an object.
  void key(std::string_view name);

  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(bool b);
  void value(int64_t n);

  // key(name) then value(v).
  template <typename T>
  void field(std::string_view name, const T& v) {
    key(name);
    value(v);
  }

 private:
  void before_value();
  void open(char bracket);
  void close(char bracket);
  void newline();
  void quoted(std::string_view text);

  std::ostream& out_;
  // Per open container: whether it has an element yet.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace hvd::info
