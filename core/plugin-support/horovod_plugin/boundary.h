// The C boundary of a built-in plugin. Inside, failures are exceptions
// (Failure) carrying an hvd_status and a message; every entry point runs its
// body through guarded(), which turns them into the status and the calling
// thread's last_error() text. Nothing is thrown across the ABI.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "horovod/abi.h"

namespace hvd_plugin {

class Failure : public std::exception {
 public:
  Failure(hvd_status status, std::string message)
      : status_(status), message_(std::move(message)) {}
  hvd_status status() const { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  hvd_status status_;
  std::string message_;
};

[[noreturn]] inline void fail(hvd_status status, std::string message) {
  throw Failure(status, std::move(message));
}

// HVD_ERR_SYSTEM with "<what>: <strerror(errno)>".
[[noreturn]] inline void fail_errno(const std::string& what) {
  int err = errno;
  fail(HVD_ERR_SYSTEM, what + ": " + std::strerror(err));
}

// A fixed buffer, so a thread's message needs no destructor when the thread
// ends after the plugin was unloaded.
inline char* last_error_buffer() {
  static thread_local char text[1024];
  return text;
}

inline void set_last_error(const char* message) {
  std::snprintf(last_error_buffer(), 1024, "%s", message);
}

inline void set_last_error(const std::string& message) {
  set_last_error(message.c_str());
}

// The calling thread's message for its last failure ("" if none yet). The
// message of an earlier failure stays until the next one, so a status the
// core learns of later (a failed completion) can still be explained.
inline const char* last_error() { return last_error_buffer(); }

// Runs `body` (returning hvd_status); an exception becomes a status and the
// thread's last_error.
template <typename Body>
hvd_status guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const Failure& f) {
    set_last_error(f.what());
    return f.status();
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return HVD_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(e.what());
    return HVD_ERR_INTERNAL;
  } catch (...) {
    set_last_error("unknown exception");
    return HVD_ERR_INTERNAL;
  }
}

// Records a failure status with a message (for the paths that return a
// status without throwing).
inline hvd_status refuse(hvd_status status, const std::string& message) {
  set_last_error(message.c_str());
  return status;
}

}  // namespace hvd_plugin
