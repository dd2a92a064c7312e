// The flight recorder's memory: per process set, a fixed ring of the last
// collectives this rank submitted, each with its state and the times it
// reached each stage. One writer (the holder of the progress lock) fills
// it; anyone may read it at any time, a signal handler included: every
// field is a relaxed atomic and nothing is allocated once a ring exists, so
// recording costs a few plain stores per op.
//
// FlightText renders rings without allocating (into a caller's buffer), so
// the same code serves a dump from a signal handler and from a thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "horovod/abi.h"

namespace hvd::runtime {

// Where a recorded op got to on this rank.
enum class FlightState : uint8_t {
  kEmpty = 0,      // no op recorded in this entry yet
  kSubmitted = 1,  // in negotiation: waits for the other ranks to submit it
  kNegotiated = 2,  // every rank submitted it; queued for the data path
  kPosted = 3,      // its reducer task runs (waits on the data path)
  kDone = 4,
  kFailed = 5,
};
const char* flight_state_name(FlightState state);

// Text of at most N-1 bytes, stored as atomic words (read while written).
template <size_t N>
class FlightChars {
  static_assert(N % 8 == 0, "whole words");

 public:
  // Stores the words up to the one holding the terminating NUL (load()
  // stops there).
  void store(std::string_view text) {
    uint64_t words[N / 8];
    const size_t n = text.size() < N - 1 ? text.size() : N - 1;
    const size_t used = n / 8 + 1;
    words[used - 1] = 0;
    __builtin_memcpy(words, text.data(), n);
    for (size_t i = 0; i < used; ++i)
      words_[i].store(words[i], std::memory_order_relaxed);
  }
  // NUL-terminated into `out` (N bytes).
  void load(char* out) const {
    uint64_t words[N / 8];
    for (size_t i = 0; i < N / 8; ++i)
      words[i] = words_[i].load(std::memory_order_relaxed);
    __builtin_memcpy(out, words, N);
    out[N - 1] = '\0';
  }

 private:
  std::atomic<uint64_t> words_[N / 8] = {};
};

// Names entries refer to by number (reducers, transports): few, each
// copied once, so recording one costs a byte. The writer adds them.
class FlightNames {
 public:
  static constexpr uint8_t kMax = 32;
  // The number of `name` (1-based), told apart by the string's address
  // (a plugin's name lives as long as the plugin); 0 once the table is full.
  uint8_t id(const std::string& name) {
    const uint8_t n = count_.load(std::memory_order_relaxed);
    for (uint8_t i = 0; i < n; ++i) {
      if (keys_[i] == &name) return static_cast<uint8_t>(i + 1);
    }
    if (n == kMax) return 0;
    keys_[n] = &name;
    text_[n].store(name);
    count_.store(static_cast<uint8_t>(n + 1), std::memory_order_release);
    return static_cast<uint8_t>(n + 1);
  }
  // Into `out` (24 bytes): the name, or "" for 0 or an unknown number.
  void load(uint8_t id, char* out) const {
    out[0] = '\0';
    if (id >= 1 && id <= count_.load(std::memory_order_acquire)) {
      text_[id - 1].load(out);
    }
  }

 private:
  const std::string* keys_[kMax] = {};
  FlightChars<24> text_[kMax];
  std::atomic<uint8_t> count_{0};
};

// Two cache lines: what submit writes, then what the later stages update.
struct alignas(64) FlightEntry {
  // 1 + the op's place among those recorded for its set; 0: empty.
  std::atomic<uint64_t> seq{0};
  FlightChars<48> name;
  std::atomic<uint64_t> bytes{0};  // this rank's input

  // hvd_collective, hvd_dtype, hvd_reduce_op.
  std::atomic<uint8_t> collective{0}, dtype{0}, op{0};
  std::atomic<uint8_t> state{0};
  // FlightNames numbers, 0 until posted; the transport is the one serving
  // the set's team (the next rank's).
  std::atomic<uint8_t> reducer{0}, transport{0};
  std::atomic<int32_t> peer{-1};  // the world rank it waits on, when known
  // Steady clock nanoseconds, as FlightRecorder::tick() gave them; 0: not
  // reached.
  std::atomic<int64_t> submitted_ns{0}, negotiated_ns{0}, posted_ns{0},
      done_ns{0};

  FlightState load_state() const {
    return static_cast<FlightState>(state.load(std::memory_order_relaxed));
  }
};
static_assert(sizeof(FlightEntry) == 128, "two cache lines");

// One process set's ring. Its members and capacity are fixed at creation.
class FlightRing {
 public:
  // `capacity` is rounded up to a power of two. `names` (the entries'
  // reducers and transports) must outlive the ring.
  FlightRing(int32_t set, std::vector<int32_t> world_ranks, size_t capacity,
             const FlightNames& names);

  int32_t set() const { return set_; }
  const std::vector<int32_t>& world_ranks() const { return world_ranks_; }
  size_t capacity() const { return mask_ + 1; }
  const FlightNames& names() const { return names_; }
  // Ops recorded so far (the ring holds the last capacity() of them).
  uint64_t recorded() const { return next_.load(std::memory_order_acquire); }

  // The writer: takes the next entry (overwriting the oldest) and returns
  // it with its seq set; fill it, then publish().
  FlightEntry& open();
  void publish(FlightEntry& entry, uint64_t seq) {
    entry.seq.store(seq, std::memory_order_release);
    next_.store(seq, std::memory_order_release);
  }
  // The entry still holding op `seq`, or null once it was overwritten.
  FlightEntry* find(uint64_t seq) {
    FlightEntry& e = entries_[(seq - 1) & mask_];
    return e.seq.load(std::memory_order_relaxed) == seq ? &e : nullptr;
  }
  const FlightEntry& at(size_t i) const { return entries_[i & mask_]; }

 private:
  int32_t set_;
  std::vector<int32_t> world_ranks_;
  size_t mask_;
  const FlightNames& names_;
  std::unique_ptr<FlightEntry[]> entries_;
  std::atomic<uint64_t> next_{0};
};

// Fills a fixed buffer; what does not fit is cut (and flagged).
class FlightText {
 public:
  FlightText(char* buffer, size_t size) : buf_(buffer), size_(size) {}
  FlightText& add(std::string_view text);
  FlightText& add(int64_t value);
  FlightText& add_json(std::string_view text);  // a quoted JSON string
  // Seconds with millisecond precision: "3.012".
  FlightText& add_seconds(int64_t ns);
  std::string_view view() const { return {buf_, used_}; }
  bool cut() const { return cut_; }
  void clear() { used_ = 0, cut_ = false; }

 private:
  char* buf_;
  size_t size_, used_ = 0;
  bool cut_ = false;
};

// What a dump says about the process, besides its rings.
struct FlightHeader {
  int32_t rank = 0, size = 1;
  int64_t pid = 0;
  const char* host = "";
  const char* reason = "";
  int64_t now_ns = 0;          // the entries' clock at the dump
  int64_t wall_offset_ns = 0;  // wall clock = that clock + this
};

// Appends one entry's log line to `out`: "set 0 #12 allreduce 'grad'
// float32 SUM 4096 B: submitted 3.012 s ago, negotiating" and, where known,
// the reducer, the transport and the rank it waits on.
void flight_line(const FlightRing& ring, const FlightEntry& entry,
                 int64_t now_ns, FlightText& out);
// The dump's JSON document, written piecewise through `sink` (which gets
// each filled buffer), so any number of entries fit a fixed buffer.
using FlightSink = void (*)(void* ctx, std::string_view chunk);
void flight_json(const FlightHeader& header, const FlightRing* const* rings,
                 size_t ring_count, FlightSink sink, void* ctx);

// The entries of `ring` in recording order (oldest first), for callers
// that visit them: calls `visit(ctx, entry)` for each non-empty one.
void flight_each(const FlightRing& ring, void (*visit)(void*, const FlightEntry&),
                 void* ctx);

}  // namespace hvd::runtime
