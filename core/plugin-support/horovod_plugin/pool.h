// A pool of small records (a transport's requests, a reducer's tasks), so
// steady traffic allocates nothing. Single-threaded: the core's thread takes
// and gives back.
#pragma once

#include <memory>
#include <vector>

namespace hvd_plugin {

// Owns every T it hands out. take() gives a value-initialised one, reusing
// one given back when there is one; put() gives it back. A reused T is
// rebuilt in place, so T may hold members that cannot be assigned (atomics).
template <typename T>
class Pool {
 public:
  T* take() {
    if (free_.empty()) {
      storage_.push_back(std::make_unique<T>());
      return storage_.back().get();
    }
    T* item = free_.back();
    free_.pop_back();
    std::destroy_at(item);
    return std::construct_at(item);
  }
  void put(T* item) { free_.push_back(item); }

 private:
  std::vector<std::unique_ptr<T>> storage_;
  std::vector<T*> free_;
};

}  // namespace hvd_plugin
