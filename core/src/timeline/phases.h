// The names of the timeline's spans, as Horovod's timeline names them.
#pragma once

#include "horovod/abi.h"

namespace hvd::timeline {

inline constexpr const char* kQueue = "QUEUE";
inline constexpr const char* kMemcpyIn = "MEMCPY_IN_FUSION_BUFFER";
inline constexpr const char* kMemcpyOut = "MEMCPY_OUT_FUSION_BUFFER";

// "ALLREDUCE", the span of the op from negotiation to completion.
const char* op_phase(hvd_collective collective);
// "NEGOTIATE_ALLREDUCE".
const char* negotiate_phase(hvd_collective collective);

}  // namespace hvd::timeline
