#include "status_codes.h"

namespace hvd::tf {

TF_Code tf_code(hvd_status status) {
  switch (status) {
    case HVD_OK:
      return TF_OK;
    case HVD_ERR_MISMATCH:
      return TF_FAILED_PRECONDITION;
    case HVD_ERR_INVALID_ARGUMENT:
    case HVD_ERR_CONFIG:
      return TF_INVALID_ARGUMENT;
    case HVD_ERR_UNSUPPORTED:
      return TF_UNIMPLEMENTED;
    case HVD_ERR_OUT_OF_MEMORY:
      return TF_RESOURCE_EXHAUSTED;
    case HVD_ERR_TIMEOUT:
      return TF_DEADLINE_EXCEEDED;
    case HVD_ERR_ABORTED:
    case HVD_ERR_SHUT_DOWN:
      return TF_ABORTED;
    case HVD_ERR_NOT_FOUND:
      return TF_NOT_FOUND;
    default:
      return TF_UNKNOWN;  // a failed rank, a system or internal error
  }
}

}  // namespace hvd::tf
