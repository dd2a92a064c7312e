// Whose fault a libfabric error is.
#pragma once

namespace hvd_ofi {

// Whether libfabric's error `err` (positive) says the peer, or the way to
// it, failed; otherwise this side did.
bool peer_failure(int err);

}  // namespace hvd_ofi
