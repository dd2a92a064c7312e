#include "timeline/timeline.h"

#include "common/log.h"
#include "timeline/trace_writer.h"

namespace hvd::timeline {
namespace {

// Records the queue holds while the writer sleeps between drains.
constexpr size_t kQueueRecords = 1 << 16;

}  // namespace

Timeline::Timeline() : queue_(kQueueRecords) {}

Timeline::~Timeline() { stop(); }

void Timeline::start(const std::string& path, bool mark_cycles, int32_t rank) {
  std::lock_guard<std::mutex> lock(lifecycle_);
  if (writer_) {
    on_ = false;
    writer_->finish(now(), dropped_.exchange(0));
    writer_.reset();
  }
  writer_ = std::make_unique<TraceWriter>(queue_, path, rank, now());
  dropped_ = 0;
  path_ = path;
  mark_cycles_ = mark_cycles;
  on_ = true;
  HVD_LOG(INFO) << "timeline: writing '" << path << "'";
}

void Timeline::stop() {
  std::lock_guard<std::mutex> lock(lifecycle_);
  if (!writer_) return;
  on_ = false;
  writer_->finish(now(), dropped_.exchange(0));
  writer_.reset();
  HVD_LOG(INFO) << "timeline: '" << path_ << "' written";
  path_.clear();
}

std::string Timeline::path() const {
  std::lock_guard<std::mutex> lock(lifecycle_);
  return path_;
}

const std::string* Timeline::intern(const std::string& text) {
  std::lock_guard<std::mutex> lock(intern_mutex_);
  return &*interned_.insert(text).first;
}

void Timeline::arrived(const std::string* row, int32_t rank) {
  if (rank < 0) return;
  Arrivals& a = arrivals_[row];
  if (a.seen.size() <= static_cast<size_t>(rank)) a.seen.resize(rank + 1);
  if (a.seen[rank]) return;
  a.seen[rank] = true;
  a.last = rank;
  instant(row, "ARRIVED", ArgKey::kRank, rank);
}

void Timeline::negotiated(const std::string* row) {
  auto it = arrivals_.find(row);
  if (it == arrivals_.end()) {
    end(row);
    return;
  }
  end(row, ArgKey::kLastRank, it->second.last);
  arrivals_.erase(it);
}

}  // namespace hvd::timeline
