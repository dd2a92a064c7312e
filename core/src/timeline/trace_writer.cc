#include "timeline/trace_writer.h"

#include <pthread.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

#include "common/error.h"
#include "common/log.h"

namespace hvd::timeline {
namespace {

// How often the writer wakes to drain the queue, and how much it formats
// before writing.
constexpr auto kDrainInterval = std::chrono::milliseconds(5);
constexpr size_t kWriteAt = 1 << 20;

const char* arg_name(ArgKey key) {
  switch (key) {
    case ArgKey::kRank:
      return "rank";
    case ArgKey::kLastRank:
      return "last_rank";
    case ArgKey::kBytes:
      return "bytes";
    case ArgKey::kNone:
      break;
  }
  return nullptr;
}

void append_int(int64_t v, std::string& out) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  out.append(digits, end);
}

// Microseconds with three decimals, without printf (the writer formats
// every event).
void append_micros(int64_t ns, std::string& out) {
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  append_int(ns / 1000, out);
  const int frac = static_cast<int>(ns % 1000);
  const char decimals[4] = {'.', static_cast<char>('0' + frac / 100),
                            static_cast<char>('0' + frac / 10 % 10),
                            static_cast<char>('0' + frac % 10)};
  out.append(decimals, 4);
}

void append_args(const Record& r, std::string& out) {
  const char* key = arg_name(r.arg_key);
  if (!key) return;
  out += ",\"args\":{\"";
  out += key;
  out += "\":";
  append_int(r.arg, out);
  out += "}";
}

}  // namespace

void append_json_string(std::string_view text, std::string& out) {
  size_t plain = 0;
  while (plain < text.size() && text[plain] != '"' && text[plain] != '\\' &&
         static_cast<unsigned char>(text[plain]) >= 0x20) {
    ++plain;
  }
  out.append(text.data(), plain);
  for (unsigned char c : text.substr(plain)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
}

TraceWriter::TraceWriter(RecordQueue& queue, const std::string& path,
                         int32_t rank, int64_t start_ns)
    : queue_(queue), path_(path), rank_(rank), start_ns_(start_ns) {
  file_ = fopen(path.c_str(), "w");
  if (!file_) {
    throw Error(HVD_ERR_SYSTEM, "timeline: cannot open '" + path +
                                    "' for writing: " + std::strerror(errno));
  }
  add_head(0);
  format_begin(buffer_);
  thread_ = std::thread([this] { run(); });
}

TraceWriter::~TraceWriter() {
  if (!finished_) finish(start_ns_, 0);
}

void TraceWriter::format_begin(std::string& out) const {
  out += "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":";
  out += std::to_string(rank_);
  out += ",\"args\":{\"name\":\"horovod rank ";
  out += std::to_string(rank_);
  out += "\"}}";
}

void TraceWriter::add_head(int32_t tid) {
  heads_.push_back("\"pid\":" + std::to_string(rank_) +
                   ",\"tid\":" + std::to_string(tid) + ",\"ts\":");
}

void TraceWriter::event_head(const char* name, const char* phase, int32_t tid,
                             int64_t ns, std::string& out) const {
  out += ",\n{";
  if (name) {
    out += "\"name\":\"";
    append_json_string(name, out);
    out += "\",";
  }
  out += "\"ph\":\"";
  out += phase;
  out += "\",";
  out += heads_[tid];
  append_micros(ns - start_ns_, out);
}

int32_t TraceWriter::tid_of(const std::string* row, std::string& out) {
  auto [it, inserted] =
      tids_.try_emplace(row, static_cast<int32_t>(rows_.size()) + 1);
  if (inserted) {
    rows_.push_back(row);
    depth_.push_back(0);
    add_head(it->second);
    const std::string tid = std::to_string(it->second);
    const std::string pid = std::to_string(rank_);
    out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
           ",\"tid\":" + tid + ",\"args\":{\"name\":\"";
    append_json_string(*row, out);
    out +=
        "\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" + pid +
        ",\"tid\":" + tid + ",\"args\":{\"sort_index\":" + tid + "}}";
  }
  return it->second;
}

void TraceWriter::format(const Record& r, std::string& out) {
  if (r.ns < start_ns_ || r.ns > end_ns_) return;
  switch (r.kind) {
    case RecordKind::kCycle:
      event_head("CYCLE_START", "i", 0, r.ns, out);
      out += ",\"s\":\"g\"}";
      return;
    case RecordKind::kBegin: {
      int32_t tid = tid_of(r.row, out);
      ++depth_[tid - 1];
      event_head(r.name, "B", tid, r.ns, out);
      append_args(r, out);
      out += "}";
      return;
    }
    case RecordKind::kEnd: {
      auto it = tids_.find(r.row);
      if (it == tids_.end() || depth_[it->second - 1] == 0) return;
      --depth_[it->second - 1];
      event_head(nullptr, "E", it->second, r.ns, out);
      append_args(r, out);
      out += "}";
      return;
    }
    case RecordKind::kInstant: {
      int32_t tid = tid_of(r.row, out);
      event_head(r.name, "i", tid, r.ns, out);
      out += ",\"s\":\"t\"";
      append_args(r, out);
      out += "}";
      return;
    }
  }
}

void TraceWriter::format_end(int64_t stop_ns, uint64_t dropped,
                             std::string& out) {
  for (size_t i = 0; i < depth_.size(); ++i) {
    for (; depth_[i] > 0; --depth_[i]) {
      event_head(nullptr, "E", static_cast<int32_t>(i) + 1, stop_ns, out);
      out += "}";
    }
  }
  if (dropped > 0) {
    event_head("EVENTS_DROPPED", "i", 0, stop_ns, out);
    out += ",\"s\":\"g\",\"args\":{\"count\":" + std::to_string(dropped) + "}}";
  }
  out += "\n]}\n";
}

void TraceWriter::drain() {
  Record r;
  while (queue_.pop(r)) {
    format(r, buffer_);
    if (buffer_.size() >= kWriteAt) write_out();
  }
}

void TraceWriter::write_out() {
  if (!buffer_.empty() &&
      fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    HVD_LOG(ERROR) << "timeline: writing '" << path_
                   << "' failed: " << std::strerror(errno);
  }
  buffer_.clear();
}

void TraceWriter::run() {
  pthread_setname_np(pthread_self(), "hvd-timeline");
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kDrainInterval);
    lock.unlock();
    drain();
    write_out();
    lock.lock();
  }
}

void TraceWriter::finish(int64_t stop_ns, uint64_t dropped) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  finished_ = true;
  end_ns_ = stop_ns;
  drain();
  format_end(stop_ns, dropped, buffer_);
  write_out();
  if (fclose(file_) != 0) {
    HVD_LOG(ERROR) << "timeline: closing '" << path_
                   << "' failed: " << std::strerror(errno);
  }
  file_ = nullptr;
  if (dropped > 0) {
    HVD_LOG(WARNING) << "timeline: " << dropped
                     << " events were dropped (the writer fell behind); '"
                     << path_ << "' lacks them";
  }
}

}  // namespace hvd::timeline
