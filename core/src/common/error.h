// Errors inside the core are exceptions carrying an hvd_status; they are
// turned into status codes (and hvd_last_error()) at the C boundary and never
// cross into a plugin.
#pragma once

#include <stdexcept>
#include <string>

#include "horovod/abi.h"

namespace hvd {

class Error : public std::runtime_error {
 public:
  Error(hvd_status status, const std::string& message, int peer = -1)
      : std::runtime_error(message), status_(status), peer_(peer) {}

  hvd_status status() const { return status_; }
  // World rank at fault, or -1.
  int peer() const { return peer_; }

 private:
  hvd_status status_;
  int peer_;
};

// "HVD_ERR_PEER_FAILED" -> "peer failed"; for messages.
const char* status_name(hvd_status status);

// Sets the calling thread's message returned by hvd_last_error().
void set_last_error(const std::string& message);
// Empties it; costs a thread-local load when it is empty already (every
// call of every entry point on the data path comes through guard()).
void clear_last_error();
const char* last_error();

// Runs `body` and converts an exception into a status plus last_error, for
// every extern "C" entry point of the core.
template <typename Body>
hvd_status guard(Body&& body) noexcept {
  try {
    clear_last_error();
    return body();
  } catch (const Error& e) {
    set_last_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return HVD_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(e.what());
    return HVD_ERR_INTERNAL;
  }
}

}  // namespace hvd
