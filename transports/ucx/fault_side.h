// Whose fault a UCX status is.
#pragma once

#include <ucs/type/status.h>

namespace hvd_ucx {

// Whether UCX's `status` for a transfer or an endpoint says that the peer,
// or the way to it, failed; otherwise this side did (out of memory or
// resources, a local device, a cancel).
bool peer_failure(ucs_status_t status);

}  // namespace hvd_ucx
