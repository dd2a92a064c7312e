// Inputs and references for the reducer tests. Reduction inputs are small
// integers (encoded in the dtype) chosen so that every order of reduction
// gives exactly the same result, which makes the reference exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "horovod/abi.h"

namespace hvd::test {

using Bytes = std::vector<uint8_t>;

// Input of `rank` for a reduction with `op`: `count` elements.
Bytes reduction_input(hvd_dtype dtype, hvd_reduce_op op, int32_t rank,
                      size_t count, uint64_t seed);
// Uniform random values in [-1, 1) (floats) or random bits: results then
// depend on the order of reduction.
Bytes random_input(hvd_dtype dtype, int32_t rank, size_t count, uint64_t seed);
// Distinct bytes per (rank, element): for data-movement collectives.
Bytes pattern(size_t bytes, uint64_t seed);

// inputs[0] op inputs[1] op ... (the test's values make the order moot).
Bytes reduce_reference(hvd_dtype dtype, hvd_reduce_op op,
                       const std::vector<Bytes>& inputs);
// In place, as the device layer scales.
void scale(hvd_dtype dtype, Bytes& data, double factor);

// Element values as doubles, for approximate comparisons.
std::vector<double> as_doubles(hvd_dtype dtype, const Bytes& data);
// The other way: each value rounded to the dtype.
Bytes from_doubles(hvd_dtype dtype, const std::vector<double>& values);

const std::vector<hvd_dtype>& all_dtypes();
const std::vector<hvd_reduce_op>& kernel_ops();
bool is_float(hvd_dtype dtype);

}  // namespace hvd::test
