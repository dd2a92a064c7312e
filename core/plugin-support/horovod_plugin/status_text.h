// Words for status codes, shared by the core's status_name() and the
// plugins' messages.
#pragma once

#include "horovod/abi.h"

namespace hvd_plugin {

inline const char* status_text(hvd_status status) {
  switch (status) {
    case HVD_OK:
      return "ok";
    case HVD_AGAIN:
      return "again";
    case HVD_ERR_UNSUPPORTED:
      return "unsupported";
    case HVD_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case HVD_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case HVD_ERR_PEER_FAILED:
      return "peer failed";
    case HVD_ERR_TIMEOUT:
      return "timed out";
    case HVD_ERR_ABORTED:
      return "aborted";
    case HVD_ERR_EPOCH_MISMATCH:
      return "epoch mismatch";
    case HVD_ERR_MISMATCH:
      return "mismatch across ranks";
    case HVD_ERR_VERSION:
      return "incompatible version";
    case HVD_ERR_CONFIG:
      return "configuration error";
    case HVD_ERR_SYSTEM:
      return "system error";
    case HVD_ERR_INTERNAL:
      return "internal error";
    case HVD_ERR_TRUNCATED:
      return "message truncated";
    case HVD_ERR_NOT_FOUND:
      return "not found";
    case HVD_ERR_SHUT_DOWN:
      return "shut down";
  }
  return "unknown status";
}

}  // namespace hvd_plugin
