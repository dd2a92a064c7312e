// The C boundary of a built-in reducer. Inside post() and init(), failures
// are exceptions (Failure) with an hvd_status and a message; guarded()
// turns them into the status and the calling thread's last_error() text.
// Nothing is thrown across the ABI.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "horovod/abi.h"

namespace hvd::reducers {

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

// The calling thread's last message. A fixed buffer, so nothing needs
// destroying when a thread ends after the plugin was unloaded.
void set_last_error(const char* message);
inline void set_last_error(const std::string& message) {
  set_last_error(message.c_str());
}
const char* last_error_text();

template <typename Body>
hvd_status guarded(Body&& body) noexcept {
  try {
    set_last_error("");
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

}  // namespace hvd::reducers
