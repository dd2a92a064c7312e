#include "shape.h"

#include <algorithm>

namespace hvd_bench {

size_t element_size(hvd_dtype dtype) {
  switch (dtype) {
    case HVD_FLOAT16:
    case HVD_BFLOAT16:
      return 2;
    case HVD_FLOAT64:
    case HVD_INT64:
      return 8;
    default:
      return 4;
  }
}

const char* dtype_label(hvd_dtype dtype) {
  switch (dtype) {
    case HVD_FLOAT16:
      return "float16";
    case HVD_BFLOAT16:
      return "bfloat16";
    case HVD_FLOAT64:
      return "float64";
    case HVD_INT32:
      return "int32";
    case HVD_INT64:
      return "int64";
    default:
      return "float32";
  }
}

Shape shape_for(hvd_collective collective, hvd_dtype dtype, int ranks,
                uint64_t bytes) {
  Shape s;
  s.collective = collective;
  s.dtype = dtype;
  s.ranks = ranks;
  s.element_bytes = element_size(dtype);
  const size_t n = static_cast<size_t>(ranks);
  size_t count = static_cast<size_t>(bytes / s.element_bytes);
  switch (collective) {
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_ALLTOALL:
    case HVD_COLL_REDUCESCATTER:
      count = std::max(count / n, size_t{1}) * n;
      s.block = count / n;
      break;
    default:
      count = std::max(count, size_t{1});
      s.block = count;
      break;
  }
  s.count = count;
  s.send_count = collective == HVD_COLL_ALLGATHER ? s.block : count;
  s.recv_count = collective == HVD_COLL_REDUCESCATTER ? s.block : count;
  return s;
}

std::vector<Shape> shapes_between(hvd_collective collective, hvd_dtype dtype,
                                  int ranks, uint64_t min_bytes,
                                  uint64_t max_bytes, uint64_t factor) {
  std::vector<Shape> shapes;
  uint64_t bytes = std::max<uint64_t>(min_bytes, 1);
  while (bytes <= max_bytes) {
    Shape s = shape_for(collective, dtype, ranks, bytes);
    if (shapes.empty() || shapes.back().count != s.count) shapes.push_back(s);
    if (bytes > max_bytes / factor) break;
    bytes *= factor;
  }
  return shapes;
}

double bus_factor(hvd_collective collective, int ranks) {
  const double n = ranks;
  switch (collective) {
    case HVD_COLL_ALLREDUCE:
      return 2.0 * (n - 1) / n;
    case HVD_COLL_BROADCAST:
      return 1.0;
    default:
      return (n - 1) / n;
  }
}

}  // namespace hvd_bench
