#include "fault_side.h"

namespace hvd_ucx {

bool peer_failure(ucs_status_t status) {
  switch (status) {
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_IO_ERROR:  // what tcp and verbs report for a link torn down
      return true;
    default:
      return false;
  }
}

}  // namespace hvd_ucx
