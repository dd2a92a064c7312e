// Byte encoding of negotiation messages. All ranks of a job run the same
// build on the same architecture, so values are written in host order.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"

namespace hvd::runtime {

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}

  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&value);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
    out_.insert(out_.end(), p, p + v.size() * sizeof(T));
  }

 private:
  std::vector<uint8_t>& out_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  explicit Reader(const std::vector<uint8_t>& in)
      : Reader(in.data(), in.size()) {}

  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T value;
    std::memcpy(&value, data_ + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string get_string() {
    uint32_t n = get<uint32_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> get_vector() {
    uint32_t n = get<uint32_t>();
    need(static_cast<size_t>(n) * sizeof(T));
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), data_ + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return v;
  }
  bool done() const { return at_ == size_; }

 private:
  void need(size_t n) const {
    if (n > size_ - at_) {
      throw Error(HVD_ERR_INTERNAL,
                  "malformed negotiation message (" + std::to_string(size_) +
                      " bytes, wanted " + std::to_string(n) + " more at " +
                      std::to_string(at_) + ")");
    }
  }
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace hvd::runtime
