// What the op library registers with TensorFlow when it is loaded
// (tf.load_op_library): the op definitions and their CPU kernels.
#pragma once

#include "status_codes.h"

namespace hvd::tf {

void register_op_definitions();      // op_definitions.cc
void register_collective_kernels();  // collective_kernels.cc
void register_query_kernels();       // query_kernels.cc

// Reports a failed registration of `what` on stderr (TensorFlow then says
// the op or kernel is missing when it is used).
void check_registered(const char* what, const Status& status);

}  // namespace hvd::tf
