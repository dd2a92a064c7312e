// Whose fault a libfabric error is: the peer's when it says the peer or the
// way to it went, this side's otherwise.
#include <gtest/gtest.h>
#include <rdma/fi_errno.h>

#include "ofi/fault_side.h"

namespace {

TEST(OfiFaultSide, ErrorsOfAPeerThatWentAreThePeers) {
  for (int err :
       {FI_ECONNRESET, FI_ECONNREFUSED, FI_ECONNABORTED, FI_ENOTCONN,
        FI_EHOSTUNREACH, FI_ENETUNREACH, FI_ETIMEDOUT, FI_EREMOTEIO, FI_EIO}) {
    EXPECT_TRUE(hvd_ofi::peer_failure(err)) << fi_strerror(err);
  }
}

TEST(OfiFaultSide, ErrorsOfThisSideAreItsOwn) {
  for (int err : {FI_ENOMEM, FI_EINVAL, FI_ECANCELED, int{FI_EOTHER}, FI_ENOSYS,
                  FI_EMSGSIZE, FI_EACCES, FI_ENOSPC, int{FI_EOVERRUN}}) {
    EXPECT_FALSE(hvd_ofi::peer_failure(err)) << fi_strerror(err);
  }
}

}  // namespace
