#include "segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "horovod_plugin/boundary.h"

namespace hvd_shm {

using hvd_plugin::fail;
using hvd_plugin::fail_errno;

std::unique_ptr<Segment> Segment::create(const std::string& name, size_t bytes,
                                         bool populate) {
  std::unique_ptr<Segment> s(new Segment);
  s->name_ = name;
  s->fd_ = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (s->fd_ < 0) fail_errno("shm_open(" + name + ")");
  s->named_ = true;
  s->size_ = bytes;
  int err = posix_fallocate(s->fd_, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    fail(err == ENOSPC ? HVD_ERR_OUT_OF_MEMORY : HVD_ERR_SYSTEM,
         "reserving " + std::to_string(bytes) + " bytes for " + name + ": " +
             std::strerror(err) + " (is /dev/shm large enough?)");
  }
  s->map(populate);
  return s;
}

std::unique_ptr<Segment> Segment::open(const std::string& name) {
  std::unique_ptr<Segment> s(new Segment);
  s->name_ = name;
  s->fd_ = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (s->fd_ < 0) {
    if (errno == ENOENT) {
      fail(HVD_ERR_NOT_FOUND,
           "shared memory " + name + " does not exist (freed by its owner?)");
    }
    fail_errno("shm_open(" + name + ")");
  }
  struct stat st {};
  if (fstat(s->fd_, &st) != 0) fail_errno("fstat(" + name + ")");
  s->size_ = static_cast<size_t>(st.st_size);
  s->map(true);
  s->close_fd();
  return s;
}

std::unique_ptr<Segment> Segment::adopt(int fd, const std::string& name,
                                        size_t max_bytes) {
  std::unique_ptr<Segment> s(new Segment);
  s->name_ = name;
  s->fd_ = fd;
  s->named_ = true;  // either end may remove the name; the second finds none
  struct stat st {};
  if (fstat(fd, &st) != 0) fail_errno("fstat(" + name + ")");
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > max_bytes)
    fail(HVD_ERR_INTERNAL, "the segment " + name + " has " +
                               std::to_string(st.st_size) +
                               " bytes, more than a connection's " +
                               std::to_string(max_bytes));
  s->size_ = static_cast<size_t>(st.st_size);
  s->map(true);
  return s;
}

void Segment::map(bool populate) {
  if (size_ == 0) return;
  int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0);
  base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, flags, fd_, 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    fail_errno("mmap of " + std::to_string(size_) + " bytes of " + name_);
  }
}

void Segment::unlink() {
  if (!named_) return;
  named_ = false;
  shm_unlink(name_.c_str());
}

void Segment::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Segment::~Segment() {
  unlink();
  if (base_ != nullptr) munmap(base_, size_);
  close_fd();
}

}  // namespace hvd_shm
