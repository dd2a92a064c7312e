// Sizes, names and DLPack types of the ABI's enums, shared by the core, the
// tools, the tests and the built-in plugins.
#pragma once

#include <cstddef>

#include "horovod/abi.h"
#include "horovod/tensor.h"

namespace hvd_plugin {

// The DLPack type of a dtype (one lane); {0, 0, 0} for an unknown dtype.
inline hvd_dl_dtype dl_dtype(hvd_dtype dtype) {
  static const hvd_dl_dtype types[HVD_DTYPE_COUNT] = {
      {HVD_DL_UINT, 8, 1},   {HVD_DL_INT, 8, 1},     {HVD_DL_UINT, 16, 1},
      {HVD_DL_INT, 16, 1},   {HVD_DL_INT, 32, 1},    {HVD_DL_INT, 64, 1},
      {HVD_DL_FLOAT, 16, 1}, {HVD_DL_BFLOAT, 16, 1}, {HVD_DL_FLOAT, 32, 1},
      {HVD_DL_FLOAT, 64, 1}, {HVD_DL_BOOL, 8, 1}};
  return dtype >= 0 && dtype < HVD_DTYPE_COUNT ? types[dtype]
                                               : hvd_dl_dtype{0, 0, 0};
}

// Bytes per element; 0 for an unknown dtype.
inline size_t dtype_size(hvd_dtype dtype) { return dl_dtype(dtype).bits / 8; }

inline const char* dtype_name(hvd_dtype dtype) {
  static const char* const names[HVD_DTYPE_COUNT] = {
      "uint8",   "int8",     "uint16",  "int16",   "int32", "int64",
      "float16", "bfloat16", "float32", "float64", "bool"};
  return dtype >= 0 && dtype < HVD_DTYPE_COUNT ? names[dtype] : "unknown dtype";
}

inline const char* collective_name(hvd_collective collective) {
  static const char* const names[HVD_COLL_COUNT] = {
      "allreduce",     "allgather", "broadcast", "alltoall",
      "reducescatter", "barrier",   "join"};
  return collective >= 0 && collective < HVD_COLL_COUNT ? names[collective]
                                                        : "unknown collective";
}

inline const char* op_name(hvd_reduce_op op) {
  static const char* const names[HVD_OP_COUNT] = {"SUM", "AVERAGE", "MIN",
                                                  "MAX", "PRODUCT", "ADASUM"};
  return op >= 0 && op < HVD_OP_COUNT ? names[op] : "unknown op";
}

inline const char* mem_kind_name(hvd_mem_kind kind) {
  static const char* const names[HVD_MEM_KIND_COUNT] = {"host", "CUDA",
                                                        "dmabuf"};
  return kind >= 0 && kind < HVD_MEM_KIND_COUNT ? names[kind]
                                                : "unknown memory";
}

}  // namespace hvd_plugin
