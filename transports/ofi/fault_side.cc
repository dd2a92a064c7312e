#include "fault_side.h"

#include <rdma/fi_errno.h>

namespace hvd_ofi {

bool peer_failure(int err) {
  switch (err) {
    case FI_ECONNRESET:
    case FI_ECONNREFUSED:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case FI_ETIMEDOUT:
    case FI_EREMOTEIO:
    case FI_EIO:  // what tcp reports for a link torn down
      return true;
    default:
      return false;
  }
}

}  // namespace hvd_ofi
