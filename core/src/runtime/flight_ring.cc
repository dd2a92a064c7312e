#include "runtime/flight_ring.h"

#include "horovod_plugin/enums.h"

namespace hvd::runtime {

const char* flight_state_name(FlightState state) {
  switch (state) {
    case FlightState::kEmpty: return "empty";
    case FlightState::kSubmitted: return "negotiating";
    case FlightState::kNegotiated: return "queued";
    case FlightState::kPosted: return "running";
    case FlightState::kDone: return "done";
    case FlightState::kFailed: return "failed";
  }
  return "unknown";
}

namespace {

size_t power_of_two_at_least(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

FlightRing::FlightRing(int32_t set, std::vector<int32_t> world_ranks,
                       size_t capacity, const FlightNames& names)
    : set_(set),
      world_ranks_(std::move(world_ranks)),
      mask_(power_of_two_at_least(capacity) - 1),
      names_(names),
      entries_(new FlightEntry[mask_ + 1]) {}

FlightEntry& FlightRing::open() {
  const uint64_t seq = next_.load(std::memory_order_relaxed) + 1;
  FlightEntry& e = entries_[(seq - 1) & mask_];
  // Readers that catch it now see an empty entry rather than a mix.
  e.seq.store(0, std::memory_order_relaxed);
  e.reducer.store(0, std::memory_order_relaxed);
  e.transport.store(0, std::memory_order_relaxed);
  e.peer.store(-1, std::memory_order_relaxed);
  e.negotiated_ns.store(0, std::memory_order_relaxed);
  e.posted_ns.store(0, std::memory_order_relaxed);
  e.done_ns.store(0, std::memory_order_relaxed);
  return e;
}

void flight_each(const FlightRing& ring,
                 void (*visit)(void*, const FlightEntry&), void* ctx) {
  const uint64_t last = ring.recorded();
  const uint64_t first = last > ring.capacity() ? last - ring.capacity() + 1 : 1;
  for (uint64_t seq = first; seq <= last; ++seq) {
    const FlightEntry& e = ring.at(seq - 1);
    if (e.seq.load(std::memory_order_acquire) == seq) visit(ctx, e);
  }
}

FlightText& FlightText::add(std::string_view text) {
  for (char c : text) {
    if (used_ + 1 >= size_) {
      cut_ = true;
      break;
    }
    buf_[used_++] = c;
  }
  return *this;
}

FlightText& FlightText::add(int64_t value) {
  char digits[24];
  int n = 0;
  uint64_t v = value < 0 ? 0 - static_cast<uint64_t>(value)
                         : static_cast<uint64_t>(value);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  if (value < 0) digits[n++] = '-';
  char text[24];
  for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
  return add(std::string_view(text, n));
}

FlightText& FlightText::add_json(std::string_view text) {
  static const char hex[] = "0123456789abcdef";
  add("\"");
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      const char escaped[2] = {'\\', c};
      add(std::string_view(escaped, 2));
    } else if (u < 0x20) {
      const char escaped[6] = {'\\', 'u', '0', '0', hex[u >> 4], hex[u & 15]};
      add(std::string_view(escaped, 6));
    } else {
      add(std::string_view(&c, 1));
    }
  }
  return add("\"");
}

FlightText& FlightText::add_seconds(int64_t ns) {
  if (ns < 0) {
    add("-");
    ns = -ns;
  }
  const int64_t ms = ns / 1000000;
  add(ms / 1000).add(".");
  const int64_t frac = ms % 1000;
  if (frac < 100) add("0");
  if (frac < 10) add("0");
  return add(frac);
}

namespace {

struct EntryText {
  char name[48], reducer[24], transport[24];
  EntryText(const FlightRing& ring, const FlightEntry& e) {
    e.name.load(name);
    ring.names().load(e.reducer.load(std::memory_order_relaxed), reducer);
    ring.names().load(e.transport.load(std::memory_order_relaxed), transport);
  }
};

int64_t load(const std::atomic<int64_t>& v) {
  return v.load(std::memory_order_relaxed);
}

}  // namespace

void flight_line(const FlightRing& ring, const FlightEntry& e, int64_t now_ns,
                 FlightText& out) {
  const EntryText text(ring, e);
  const auto collective = e.collective.load(std::memory_order_relaxed);
  const FlightState state = e.load_state();
  out.add("set ").add(ring.set()).add(" #").add(
      static_cast<int64_t>(e.seq.load(std::memory_order_relaxed)));
  out.add(" ").add(hvd_plugin::collective_name(collective)).add(" '");
  out.add(text.name).add("'");
  if (collective != HVD_COLL_BARRIER && collective != HVD_COLL_JOIN) {
    out.add(" ").add(hvd_plugin::dtype_name(e.dtype.load()));
    if (collective == HVD_COLL_ALLREDUCE ||
        collective == HVD_COLL_REDUCESCATTER) {
      out.add(" ").add(hvd_plugin::op_name(e.op.load()));
    }
    out.add(" ").add(static_cast<int64_t>(e.bytes.load())).add(" B");
  }
  out.add(": ").add(flight_state_name(state));
  const int64_t submitted = load(e.submitted_ns);
  const int64_t done = load(e.done_ns);
  if (state == FlightState::kDone || state == FlightState::kFailed) {
    out.add(" in ").add_seconds(done - submitted).add(" s, ");
    out.add_seconds(now_ns - done).add(" s ago");
  } else {
    out.add(" since ").add_seconds(now_ns - submitted).add(" s");
  }
  if (text.reducer[0]) {
    out.add(", reducer ").add(text.reducer).add(" over ").add(text.transport);
  }
  const int32_t peer = e.peer.load(std::memory_order_relaxed);
  if (peer >= 0) out.add(", waits for rank ").add(peer);
}

namespace {

// Writes through a fixed buffer, flushing to the sink when it fills.
class ChunkedJson {
 public:
  ChunkedJson(FlightSink sink, void* ctx) : sink_(sink), ctx_(ctx) {}
  ~ChunkedJson() { flush(); }
  // Room for one entry's fields (names are bounded).
  FlightText& text() {
    if (text_.view().size() > sizeof buf_ - 1024) flush();
    return text_;
  }
  void flush() {
    if (!text_.view().empty()) sink_(ctx_, text_.view());
    text_.clear();
  }

 private:
  FlightSink sink_;
  void* ctx_;
  char buf_[8192];
  FlightText text_{buf_, sizeof buf_};
};

void add_time(FlightText& t, const char* key, int64_t steady_ns,
              int64_t wall_offset_ns) {
  t.add(",\"").add(key).add("\":");
  t.add(steady_ns ? steady_ns + wall_offset_ns : 0);
}

struct JsonVisit {
  const FlightRing* ring;
  ChunkedJson* out;
  const FlightHeader* header;
  bool first = true;
};

void json_entry(void* ctx, const FlightEntry& e) {
  auto* v = static_cast<JsonVisit*>(ctx);
  const EntryText text(*v->ring, e);
  FlightText& t = v->out->text();
  t.add(v->first ? "\n    {" : ",\n    {");
  v->first = false;
  t.add("\"seq\":").add(static_cast<int64_t>(e.seq.load()));
  t.add(",\"name\":").add_json(text.name);
  t.add(",\"collective\":\"")
      .add(hvd_plugin::collective_name(e.collective.load()))
      .add("\"");
  t.add(",\"dtype\":\"").add(hvd_plugin::dtype_name(e.dtype.load())).add("\"");
  t.add(",\"op\":\"").add(hvd_plugin::op_name(e.op.load())).add("\"");
  t.add(",\"bytes\":").add(static_cast<int64_t>(e.bytes.load()));
  t.add(",\"reducer\":").add_json(text.reducer);
  t.add(",\"transport\":").add_json(text.transport);
  t.add(",\"state\":\"").add(flight_state_name(e.load_state())).add("\"");
  t.add(",\"peer\":").add(e.peer.load());
  const int64_t offset = v->header->wall_offset_ns;
  add_time(t, "submitted_ns", load(e.submitted_ns), offset);
  add_time(t, "negotiated_ns", load(e.negotiated_ns), offset);
  add_time(t, "posted_ns", load(e.posted_ns), offset);
  add_time(t, "done_ns", load(e.done_ns), offset);
  t.add("}");
}

}  // namespace

void flight_json(const FlightHeader& h, const FlightRing* const* rings,
                 size_t ring_count, FlightSink sink, void* ctx) {
  ChunkedJson out(sink, ctx);
  FlightText& t = out.text();
  t.add("{\"format\":\"horovod-flight-recorder\",\"version\":1");
  t.add(",\"rank\":").add(h.rank).add(",\"size\":").add(h.size);
  t.add(",\"pid\":").add(h.pid).add(",\"host\":").add_json(h.host);
  t.add(",\"reason\":").add_json(h.reason);
  t.add(",\"time_ns\":").add(h.now_ns + h.wall_offset_ns);
  t.add(",\n \"sets\":[");
  bool first_set = true;
  for (size_t i = 0; i < ring_count; ++i) {
    const FlightRing* ring = rings[i];
    if (!ring) continue;
    FlightText& s = out.text();
    s.add(first_set ? "\n  {" : ",\n  {");
    first_set = false;
    s.add("\"id\":").add(ring->set()).add(",\"ranks\":[");
    for (size_t k = 0; k < ring->world_ranks().size(); ++k) {
      out.text().add(k ? "," : "").add(ring->world_ranks()[k]);
    }
    out.text().add("],\"capacity\":").add(
        static_cast<int64_t>(ring->capacity()));
    out.text().add(",\"recorded\":").add(
        static_cast<int64_t>(ring->recorded()));
    out.text().add(",\"entries\":[");
    JsonVisit visit{ring, &out, &h};
    flight_each(*ring, json_entry, &visit);
    out.text().add("]}");
  }
  out.text().add("]}\n");
}

}  // namespace hvd::runtime
