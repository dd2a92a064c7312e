// A doubly linked list threaded through its elements (a `Link` member), so
// queueing a request never allocates. An element is in at most one list per
// Link member.
#pragma once

#include <cstddef>

namespace hvd_transport_common {

struct Link {
  void* prev = nullptr;
  void* next = nullptr;
  bool linked = false;
};

template <typename T, Link T::*L>
class List {
 public:
  bool empty() const { return head_ == nullptr; }
  size_t size() const { return size_; }
  T* front() const { return head_; }
  static T* next(T* item) { return static_cast<T*>((item->*L).next); }
  static bool linked(const T* item) { return (item->*L).linked; }

  void push_back(T* item) {
    Link& link = item->*L;
    link.prev = tail_;
    link.next = nullptr;
    link.linked = true;
    if (tail_ != nullptr) {
      (tail_->*L).next = item;
    } else {
      head_ = item;
    }
    tail_ = item;
    ++size_;
  }

  void remove(T* item) {
    Link& link = item->*L;
    if (!link.linked) return;
    T* prev = static_cast<T*>(link.prev);
    T* next = static_cast<T*>(link.next);
    if (prev != nullptr) {
      (prev->*L).next = next;
    } else {
      head_ = next;
    }
    if (next != nullptr) {
      (next->*L).prev = prev;
    } else {
      tail_ = prev;
    }
    link = Link{};
    --size_;
  }

  T* pop_front() {
    T* item = head_;
    if (item != nullptr) remove(item);
    return item;
  }

  // The first element satisfying `pred`, or nullptr.
  template <typename Pred>
  T* find(Pred&& pred) const {
    for (T* item = head_; item != nullptr; item = next(item)) {
      if (pred(item)) return item;
    }
    return nullptr;
  }

 private:
  T* head_ = nullptr;
  T* tail_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hvd_transport_common
