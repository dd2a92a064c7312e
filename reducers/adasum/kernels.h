// The arithmetic of Adasum on host memory, for float16, float32 and
// float64: the dot product and squared norms of two vectors, and the
// combination a = ca * a + cb * b. Sums are taken in double precision.
#pragma once

#include <cstddef>

#include "horovod/abi.h"

namespace hvd::reducers::adasum {

bool has_kernels(hvd_dtype dtype);  // float16, float32, float64

// out[0] += a . b, out[1] += |a|^2, out[2] += |b|^2 over `count` elements.
void dot_and_norms(hvd_dtype dtype, const void* a, const void* b, size_t count,
                   double out[3]);

// a[i] = ca * a[i] + cb * b[i], computed in double and rounded once.
void scaled_add(hvd_dtype dtype, void* a, double ca, const void* b, double cb,
                size_t count);

// a[i] *= factor.
void scale(hvd_dtype dtype, void* a, double factor, size_t count);

}  // namespace hvd::reducers::adasum
