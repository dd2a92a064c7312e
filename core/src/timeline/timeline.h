// The timeline: a Chrome trace of every tensor's life on this rank
// (negotiation, queue, copies in and out of the fusion buffer, the
// reducer's steps, the collective as the enclosing span), for
// chrome://tracing and Perfetto.
//
// The data path only pushes fixed-size records into a lock-free queue; a
// writer thread formats and writes them (trace_writer.h). When no trace is
// running every call site costs one predictable branch on on().
//
//   if (timeline.on()) timeline.begin(timeline.intern(name), "QUEUE");
//
// Rows and names given as pointers must live as long as the Timeline:
// literals, or strings from intern().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "timeline/record_queue.h"

namespace hvd::timeline {

class TraceWriter;

class Timeline {
 public:
  Timeline();
  ~Timeline();  // stops a trace in progress
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Any thread. Starts writing a trace of `rank` to `path`, replacing one in
  // progress; throws hvd::Error when the file cannot be opened.
  void start(const std::string& path, bool mark_cycles, int32_t rank);
  // Any thread. Writes out what is queued, closes open spans and the file.
  // Nothing when no trace runs.
  void stop();
  bool on() const { return on_.load(std::memory_order_relaxed); }
  bool marks_cycles() const {
    return mark_cycles_.load(std::memory_order_relaxed);
  }
  // The path of the trace in progress ("" when off).
  std::string path() const;

  // Any thread: a string that lives as long as the timeline.
  const std::string* intern(const std::string& text);

  void begin(const std::string* row, const char* name,
             ArgKey key = ArgKey::kNone, int64_t arg = 0) {
    push({now(), row, name, arg, RecordKind::kBegin, key});
  }
  void end(const std::string* row, ArgKey key = ArgKey::kNone,
           int64_t arg = 0) {
    push({now(), row, nullptr, arg, RecordKind::kEnd, key});
  }
  void instant(const std::string* row, const char* name,
               ArgKey key = ArgKey::kNone, int64_t arg = 0) {
    push({now(), row, name, arg, RecordKind::kInstant, key});
  }
  void cycle(int64_t ns) {
    push({ns, nullptr, nullptr, 0, RecordKind::kCycle, ArgKey::kNone});
  }
  static int64_t now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Negotiation as the coordinator sees it (background thread only): a
  // rank's request for `row` arrived (an instant naming the rank; repeats
  // are ignored), and the response came (the end of the NEGOTIATE span, naming
  // the rank that arrived last).
  void arrived(const std::string* row, int32_t rank);
  void negotiated(const std::string* row);

  // The rows of the reducer task the background thread is driving, for
  // plugin hooks that name no row (nullptr: none).
  void set_task_rows(const std::vector<const std::string*>* rows) {
    task_rows_ = rows;
  }
  const std::vector<const std::string*>* task_rows() const {
    return task_rows_;
  }

 private:
  void push(const Record& record) {
    if (!queue_.push(record)) dropped_.fetch_add(1, std::memory_order_relaxed);
  }

  RecordQueue queue_;
  std::atomic<bool> on_{false};
  std::atomic<bool> mark_cycles_{false};
  std::atomic<uint64_t> dropped_{0};
  mutable std::mutex lifecycle_;  // start / stop
  std::unique_ptr<TraceWriter> writer_;
  std::string path_;

  std::mutex intern_mutex_;
  std::unordered_set<std::string> interned_;  // nodes never move

  struct Arrivals {
    std::vector<bool> seen;  // by world rank
    int32_t last = -1;
  };
  std::unordered_map<const std::string*, Arrivals> arrivals_;
  const std::vector<const std::string*>* task_rows_ = nullptr;
};

}  // namespace hvd::timeline
