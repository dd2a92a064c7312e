// A POSIX shared-memory object mapped into this process. The name exists
// only until unlink(): the mapping (and a passed file descriptor) keep the
// memory alive after that, so segments are unlinked as soon as every process
// that needs them has them.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace hvd_shm {

class Segment {
 public:
  // Creates `name` (which must not exist) of `bytes`, reserved up front so a
  // full /dev/shm fails here and not later with SIGBUS. `populate` maps every
  // page now.
  static std::unique_ptr<Segment> create(const std::string& name, size_t bytes,
                                         bool populate);
  // Maps an existing object by name (HVD_ERR_NOT_FOUND when gone).
  static std::unique_ptr<Segment> open(const std::string& name);
  // Maps the object behind a received file descriptor (taking it); refuses
  // one larger than `max_bytes` before mapping anything.
  static std::unique_ptr<Segment> adopt(int fd, const std::string& name,
                                        size_t max_bytes);

  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  void* base() const { return base_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }  // -1 once closed

  void unlink();    // removes the name; idempotent
  void close_fd();  // the mapping stays

 private:
  Segment() = default;
  void map(bool populate);

  std::string name_;
  int fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
  bool named_ = false;  // this process created the name and may remove it
};

}  // namespace hvd_shm
