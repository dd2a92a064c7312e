// TensorFlow's dtypes as the core's tensor descriptor spells them.
#pragma once

#include <tensorflow/c/tf_datatype.h>

#include "horovod/tensor.h"

namespace hvd::tf {

// The DLPack dtype of `dtype`; false for a dtype the core does not carry
// (strings, complex, quantized, uint32, uint64).
bool to_dl_dtype(TF_DataType dtype, hvd_dl_dtype* out);

// The list the ops' "T" attribute allows: every dtype of to_dl_dtype().
extern const char* const kTypeAttr;

}  // namespace hvd::tf
