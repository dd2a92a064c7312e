// The writer thread of one trace: it drains the record queue every few
// milliseconds, formats the records as Chrome trace events (the
// "traceEvents" JSON that chrome://tracing and Perfetto load) and writes
// them. Each row (a tensor name) becomes a thread of the rank's process,
// named by a metadata event when first seen. Spans are kept well nested:
// an end whose begin came before the trace started is dropped, and spans
// still open when the trace stops are closed then.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "timeline/record_queue.h"

namespace hvd::timeline {

class TraceWriter {
 public:
  // Opens `path` (throws hvd::Error naming it) and starts the thread.
  // Records older than `start_ns` are left over from an earlier trace and
  // skipped.
  TraceWriter(RecordQueue& queue, const std::string& path, int32_t rank,
              int64_t start_ns);
  // Drains what is queued, closes the open spans at `stop_ns`, notes
  // `dropped` records the queue refused, and closes the file.
  void finish(int64_t stop_ns, uint64_t dropped);
  ~TraceWriter();  // finish() if not yet called
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Formats one record into `out` (for tests, and the thread).
  void format(const Record& record, std::string& out);
  // The closing events and the end of the JSON document.
  void format_end(int64_t stop_ns, uint64_t dropped, std::string& out);
  // The start of the JSON document.
  void format_begin(std::string& out) const;

 private:
  void run();
  void drain();
  void write_out();
  int32_t tid_of(const std::string* row, std::string& out);
  void add_head(int32_t tid);
  void event_head(const char* name, const char* phase, int32_t tid, int64_t ns,
                  std::string& out) const;

  RecordQueue& queue_;
  std::string path_;
  int32_t rank_;
  int64_t start_ns_;
  FILE* file_ = nullptr;
  std::string buffer_;
  std::unordered_map<const std::string*, int32_t> tids_;
  std::vector<const std::string*> rows_;  // by tid - 1
  std::vector<int32_t> depth_;            // open spans, by tid - 1
  std::vector<std::string> heads_;        // by tid: "pid":P,"tid":T,"ts":
  int64_t end_ns_ = INT64_MAX;  // set by finish(): later records are skipped

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool finished_ = false;
  std::thread thread_;
};

// `text` as the inside of a JSON string.
void append_json_string(std::string_view text, std::string& out);

}  // namespace hvd::timeline
