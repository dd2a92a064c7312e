#include "runtime/fusion.h"

#include "device/device.h"

namespace hvd::runtime {

bool fusable(const Response& r) {
  if (r.kind != ResponseKind::kData) return false;
  if (r.op == HVD_OP_ADASUM) return false;  // its coefficients are per tensor
  switch (r.collective) {
    case HVD_COLL_ALLREDUCE:
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_BROADCAST:
    case HVD_COLL_REDUCESCATTER:
      return true;
    default:
      return false;
  }
}

bool same_fusion_key(const Response& a, const Response& b) {
  if (a.process_set != b.process_set || a.collective != b.collective ||
      a.dtype != b.dtype || a.mem_kind != b.mem_kind ||
      a.device_id != b.device_id) {
    return false;
  }
  if (a.collective == HVD_COLL_ALLREDUCE ||
      a.collective == HVD_COLL_REDUCESCATTER) {
    return a.op == b.op && a.prescale == b.prescale &&
           a.postscale == b.postscale;
  }
  if (a.collective == HVD_COLL_BROADCAST) return a.root == b.root;
  return true;
}

namespace {

bool same_key(const Response& a, const Response& b) {
  return a.cache_bits.empty() == b.cache_bits.empty() && same_fusion_key(a, b);
}

}  // namespace

void copy_header(const Response& from, Response& to) {
  to.kind = from.kind;
  to.process_set = from.process_set;
  to.collective = from.collective;
  to.dtype = from.dtype;
  to.mem_kind = from.mem_kind;
  to.device_id = from.device_id;
  to.op = from.op;
  to.prescale = from.prescale;
  to.postscale = from.postscale;
  to.root = from.root;
  to.error_status = from.error_status;
  to.error = from.error;
  to.last_joined = from.last_joined;
  to.set_change = from.set_change;
}

uint64_t element_count(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t entry_bytes(const Response& r, const Entry& e, int32_t set_size) {
  const uint64_t esize = dtype_size(r.dtype);
  uint64_t bytes = 0;
  for (size_t t = 0; t < e.shapes.size(); ++t) {
    const auto& shape = e.shapes[t];
    if (r.collective == HVD_COLL_ALLGATHER) {
      uint64_t row = 1;
      for (size_t d = 1; d < shape.size(); ++d) row *= shape[d];
      uint64_t rows = 0;
      for (int64_t n : e.per_rank[t]) rows += static_cast<uint64_t>(n);
      bytes += rows * row * esize;
    } else if (r.collective == HVD_COLL_ALLTOALL) {
      uint64_t row = 1;
      for (size_t d = 1; d < shape.size(); ++d) row *= shape[d];
      uint64_t rows = 0;
      for (const auto& splits : e.per_rank) {
        for (int64_t n : splits) rows += static_cast<uint64_t>(n);
      }
      bytes += rows * row * esize / static_cast<uint64_t>(set_size);
    } else {
      bytes += element_count(shape) * esize;
    }
  }
  return bytes;
}

uint64_t response_bytes(const Response& r, int32_t set_size) {
  uint64_t bytes = 0;
  for (const Entry& e : r.entries) bytes += entry_bytes(r, e, set_size);
  return bytes;
}

std::vector<Response> fuse(std::vector<Response> ready, uint64_t threshold,
                           int32_t set_size) {
  std::vector<Response> out;
  std::vector<uint64_t> out_bytes;
  out.reserve(ready.size());
  for (Response& r : ready) {
    uint64_t bytes = response_bytes(r, set_size);
    bool merged = false;
    if (fusable(r) && threshold > 0) {
      for (size_t i = 0; i < out.size(); ++i) {
        if (fusable(out[i]) && same_key(out[i], r) &&
            out_bytes[i] + bytes <= threshold) {
          for (Entry& e : r.entries) out[i].entries.push_back(std::move(e));
          for (uint32_t bit : r.cache_bits) out[i].cache_bits.push_back(bit);
          out_bytes[i] += bytes;
          merged = true;
          break;
        }
      }
    }
    if (!merged) {
      out.push_back(std::move(r));
      out_bytes.push_back(bytes);
    }
  }
  return out;
}

}  // namespace hvd::runtime
