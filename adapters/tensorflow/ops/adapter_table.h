// The op library's adapter table, registered with the core on first use:
// outputs whose shape is known only after negotiation are allocated through
// the op's kernel context, and the core's done ends the TensorFlow op.
#pragma once

#include <string>

#include "horovod/horovod.h"

namespace hvd::tf {

// The registration; nullptr with *error set when the core refused it.
hvd_adapter* tf_adapter(std::string* error);

}  // namespace hvd::tf
