// Whose fault a UCX status is: the peer's when it says the peer or the way
// to it went, this side's otherwise.
#include <gtest/gtest.h>
#include <ucs/type/status.h>

#include "ucx/fault_side.h"

namespace {

TEST(UcxFaultSide, StatusesOfAPeerThatWentAreThePeers) {
  for (ucs_status_t s :
       {UCS_ERR_CONNECTION_RESET, UCS_ERR_ENDPOINT_TIMEOUT, UCS_ERR_UNREACHABLE,
        UCS_ERR_REJECTED, UCS_ERR_NOT_CONNECTED, UCS_ERR_TIMED_OUT,
        UCS_ERR_IO_ERROR}) {
    EXPECT_TRUE(hvd_ucx::peer_failure(s)) << ucs_status_string(s);
  }
}

TEST(UcxFaultSide, StatusesOfThisSideAreItsOwn) {
  for (ucs_status_t s :
       {UCS_ERR_NO_MEMORY, UCS_ERR_NO_RESOURCE, UCS_ERR_NO_DEVICE,
        UCS_ERR_CANCELED, UCS_ERR_INVALID_PARAM, UCS_ERR_UNSUPPORTED,
        UCS_ERR_BUSY, UCS_ERR_BUFFER_TOO_SMALL, UCS_ERR_EXCEEDS_LIMIT}) {
    EXPECT_FALSE(hvd_ucx::peer_failure(s)) << ucs_status_string(s);
  }
}

}  // namespace
