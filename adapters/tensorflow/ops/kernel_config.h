// What a collective kernel reads from its node once, at construction: the
// name the ranks match it by, and its attributes.
#pragma once

#include <tensorflow/c/kernels.h>

#include <cstdint>
#include <string>

#include "horovod/abi.h"

namespace hvd::tf {

struct KernelConfig {
  hvd_collective collective = HVD_COLL_ALLREDUCE;
  // The node's name, without its name scope when ignore_name_scope is set
  // (as Horovod names its tensors). Ops inside a tf.function graph are
  // matched by it across ranks whatever order TensorFlow runs them in.
  std::string name;
  hvd_reduce_op op = HVD_OP_SUM;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t process_set = 0;
  int32_t root = 0;
};

// The kernel's configuration; nullptr (the construction failed, with TF
// told why) when an attribute is missing or invalid.
KernelConfig* read_config(TF_OpKernelConstruction* ctx,
                          hvd_collective collective);

}  // namespace hvd::tf
