#include "runtime/messages.h"

#include "runtime/wire.h"

namespace hvd::runtime {
namespace {

void put_shapes(Writer& w, const std::vector<std::vector<int64_t>>& shapes) {
  w.put<uint32_t>(static_cast<uint32_t>(shapes.size()));
  for (const auto& s : shapes) w.put_vector(s);
}

std::vector<std::vector<int64_t>> get_shapes(Reader& r) {
  uint32_t n = r.get<uint32_t>();
  std::vector<std::vector<int64_t>> shapes;
  shapes.reserve(n);
  for (uint32_t i = 0; i < n; ++i) shapes.push_back(r.get_vector<int64_t>());
  return shapes;
}

}  // namespace

void encode(const RequestList& list, std::vector<uint8_t>& out) {
  out.clear();
  Writer w(out);
  w.put<uint8_t>(list.shutdown);
  w.put<uint8_t>(list.busy);
  w.put<uint32_t>(static_cast<uint32_t>(list.requests.size()));
  for (const Request& q : list.requests) {
    w.put(q.process_set);
    w.put_string(q.name);
    w.put(q.collective);
    w.put(q.dtype);
    w.put(q.mem_kind);
    w.put(q.device_id);
    w.put(q.op);
    w.put(q.prescale);
    w.put(q.postscale);
    w.put(q.root);
    put_shapes(w, q.shapes);
    w.put_vector(q.splits);
    w.put(q.failure_status);
    w.put_string(q.failure);
    w.put(q.set_change);
  }
  w.put_vector(list.cache_hits);
  w.put_vector(list.cache_stale);
}

RequestList decode_requests(const std::vector<uint8_t>& in) {
  Reader r(in);
  RequestList list;
  list.shutdown = r.get<uint8_t>() != 0;
  list.busy = r.get<uint8_t>() != 0;
  uint32_t n = r.get<uint32_t>();
  list.requests.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    Request q;
    q.process_set = r.get<int32_t>();
    q.name = r.get_string();
    q.collective = r.get<hvd_collective>();
    q.dtype = r.get<hvd_dtype>();
    q.mem_kind = r.get<hvd_mem_kind>();
    q.device_id = r.get<int32_t>();
    q.op = r.get<hvd_reduce_op>();
    q.prescale = r.get<double>();
    q.postscale = r.get<double>();
    q.root = r.get<int32_t>();
    q.shapes = get_shapes(r);
    q.splits = r.get_vector<int64_t>();
    q.failure_status = r.get<hvd_status>();
    q.failure = r.get_string();
    q.set_change = r.get<SetChange>();
    list.requests.push_back(std::move(q));
  }
  list.cache_hits = r.get_vector<uint64_t>();
  list.cache_stale = r.get_vector<uint64_t>();
  if (!r.done()) throw Error(HVD_ERR_INTERNAL, "trailing bytes in requests");
  return list;
}

void encode(const ResponseList& list, std::vector<uint8_t>& out) {
  out.clear();
  Writer w(out);
  w.put<uint8_t>(list.shutdown);
  w.put(list.shutdown_rank);
  w.put_vector(list.cache_erase);
  w.put<uint8_t>(list.busy);
  w.put<uint8_t>(list.tuned);
  w.put(list.fusion_threshold);
  w.put(list.cycle_time_ns);
  w.put_string(list.reducer);
  w.put_string(list.stall_warning);
  w.put_string(list.stall_failure);
  w.put<uint32_t>(static_cast<uint32_t>(list.responses.size()));
  for (const Response& p : list.responses) {
    w.put<uint8_t>(!p.cache_bits.empty());
    if (!p.cache_bits.empty()) {
      w.put(p.process_set);
      w.put_string(p.reducer);
      w.put_vector(p.cache_bits);
      continue;
    }
    w.put(static_cast<int32_t>(p.kind));
    w.put(p.process_set);
    w.put(p.collective);
    w.put(p.dtype);
    w.put(p.mem_kind);
    w.put(p.device_id);
    w.put(p.op);
    w.put(p.prescale);
    w.put(p.postscale);
    w.put(p.root);
    w.put_string(p.reducer);
    w.put(p.error_status);
    w.put_string(p.error);
    w.put(p.last_joined);
    w.put(p.set_change);
    w.put<uint32_t>(static_cast<uint32_t>(p.entries.size()));
    for (const Entry& e : p.entries) {
      w.put_string(e.name);
      put_shapes(w, e.shapes);
      put_shapes(w, e.per_rank);
    }
  }
}

ResponseList decode_responses(const std::vector<uint8_t>& in) {
  Reader r(in);
  ResponseList list;
  list.shutdown = r.get<uint8_t>() != 0;
  list.shutdown_rank = r.get<int32_t>();
  list.cache_erase = r.get_vector<uint32_t>();
  list.busy = r.get<uint8_t>() != 0;
  list.tuned = r.get<uint8_t>() != 0;
  list.fusion_threshold = r.get<uint64_t>();
  list.cycle_time_ns = r.get<int64_t>();
  list.reducer = r.get_string();
  list.stall_warning = r.get_string();
  list.stall_failure = r.get_string();
  uint32_t n = r.get<uint32_t>();
  list.responses.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    Response p;
    if (r.get<uint8_t>() != 0) {
      p.process_set = r.get<int32_t>();
      p.reducer = r.get_string();
      p.cache_bits = r.get_vector<uint32_t>();
      list.responses.push_back(std::move(p));
      continue;
    }
    p.kind = static_cast<ResponseKind>(r.get<int32_t>());
    p.process_set = r.get<int32_t>();
    p.collective = r.get<hvd_collective>();
    p.dtype = r.get<hvd_dtype>();
    p.mem_kind = r.get<hvd_mem_kind>();
    p.device_id = r.get<int32_t>();
    p.op = r.get<hvd_reduce_op>();
    p.prescale = r.get<double>();
    p.postscale = r.get<double>();
    p.root = r.get<int32_t>();
    p.reducer = r.get_string();
    p.error_status = r.get<hvd_status>();
    p.error = r.get_string();
    p.last_joined = r.get<int32_t>();
    p.set_change = r.get<SetChange>();
    uint32_t entries = r.get<uint32_t>();
    p.entries.reserve(entries);
    for (uint32_t k = 0; k < entries; ++k) {
      Entry e;
      e.name = r.get_string();
      e.shapes = get_shapes(r);
      e.per_rank = get_shapes(r);
      p.entries.push_back(std::move(e));
    }
    list.responses.push_back(std::move(p));
  }
  if (!r.done()) throw Error(HVD_ERR_INTERNAL, "trailing bytes in responses");
  return list;
}

const char* call_name(const Request& q) {
  switch (q.set_change) {
    case SetChange::kAdd:
      return "hvd_add_process_set";
    case SetChange::kRemove:
      return "hvd_remove_process_set";
    default:
      return collective_name(q.collective);
  }
}

}  // namespace hvd::runtime
