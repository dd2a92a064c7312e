#include "runtime/flight_recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/log.h"
#include "runtime/pending_op.h"

namespace hvd::runtime {

// The process-wide part: the recorder signals reach, and the handlers that
// were there before (a fatal signal goes on to them after the dump).
struct FlightSignals {
  static constexpr int kFatal[] = {SIGSEGV, SIGBUS,  SIGFPE,
                                   SIGILL,  SIGABRT, SIGTERM};
  static inline std::atomic<FlightRecorder*> current{nullptr};
  static inline std::atomic<pid_t> owner{0};  // not a forked child's
  static inline struct sigaction previous[NSIG];

  static const char* reason(int sig) {
    switch (sig) {
      case SIGSEGV: return "fatal signal SIGSEGV";
      case SIGBUS: return "fatal signal SIGBUS";
      case SIGFPE: return "fatal signal SIGFPE";
      case SIGILL: return "fatal signal SIGILL";
      case SIGABRT: return "fatal signal SIGABRT";
      case SIGTERM: return "SIGTERM";
    }
    return "signal";
  }

  static FlightRecorder* mine() {
    return getpid() == owner.load() ? current.load() : nullptr;
  }

  static void on_fatal(int sig) {
    const int saved = errno;
    FlightRecorder* r = mine();
    if (r && !(sig == SIGTERM && r->failure_dumped_.load())) {
      r->dump(reason(sig));
    }
    // Hand it on: the handler we replaced, or the default action, runs
    // when this returns (the signal is blocked until then).
    sigaction(sig, &previous[sig], nullptr);
    raise(sig);
    errno = saved;
  }

  static void on_usr1(int) {
    const int saved = errno;
    FlightRecorder* r = mine();
    if (r && r->wake_pipe_[1] >= 0) {
      const char byte = 1;
      ssize_t n = write(r->wake_pipe_[1], &byte, 1);
      (void)n;
    }
    errno = saved;
  }

  // Once per process; a handler someone else set up is left alone for
  // SIGUSR1 (whose default would end the process) and kept to chain to for
  // the fatal ones.
  static void install() {
    static std::once_flag once;
    std::call_once(once, [] {
      struct sigaction action {};
      sigemptyset(&action.sa_mask);
      action.sa_handler = on_fatal;
      action.sa_flags = SA_RESTART;
      for (int sig : kFatal) {
        sigaction(sig, nullptr, &previous[sig]);
        if (previous[sig].sa_handler == SIG_IGN) continue;
        if (sig == SIGTERM && previous[sig].sa_handler != SIG_DFL) continue;
        sigaction(sig, &action, nullptr);
      }
      struct sigaction usr1 {};
      sigaction(SIGUSR1, nullptr, &usr1);
      if (usr1.sa_handler == SIG_DFL && !(usr1.sa_flags & SA_SIGINFO)) {
        action.sa_handler = on_usr1;
        sigaction(SIGUSR1, &action, nullptr);
      } else {
        HVD_LOG(INFO) << "flight recorder: SIGUSR1 has a handler already; "
                         "dumps come on stalls, failures and fatal signals";
      }
    });
  }
};

namespace {

void copy_text(char* out, size_t size, const std::string& text) {
  const size_t n = text.size() < size - 1 ? text.size() : size - 1;
  memcpy(out, text.data(), n);
  out[n] = '\0';
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void sink_to_fd(void* ctx, std::string_view chunk) {
  write_all(*static_cast<int*>(ctx), chunk);
}

// mkdir -p with system calls alone.
bool make_dirs(const char* dir) {
  char path[512];
  const size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) return false;
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; ++i) {
    if (path[i] != '/' && path[i] != '\0') continue;
    const char saved = path[i];
    path[i] = '\0';
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return false;
    path[i] = saved;
  }
  return true;
}

}  // namespace

std::string FlightRecorder::log_dir(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* tmp = getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/horovod-logs-" +
         std::to_string(getuid());
}

namespace {

int64_t steady_now() {
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

}  // namespace

FlightRecorder::FlightRecorder(const Options& options)
    : entries_(options.entries ? options.entries : 1),
      rank_(options.rank),
      size_(options.size) {
  wall_offset_ns_ =
      std::chrono::system_clock::now().time_since_epoch().count() -
      steady_now();
  now_ = steady_now();
  gethostname(host_, sizeof host_ - 1);
  copy_text(dir_, sizeof dir_, options.dir);
  copy_text(file_, sizeof file_,
            options.dir + "/flight-rank" + std::to_string(rank_) + "-pid" +
                std::to_string(getpid()) + ".json");
  if (pipe2(wake_pipe_, O_CLOEXEC) == 0) {
    thread_ = std::thread([this] { serve_signals(); });
  }
  FlightSignals::install();
  FlightSignals::owner = getpid();
  FlightSignals::current = this;
}

FlightRecorder::~FlightRecorder() {
  FlightRecorder* self = this;
  FlightSignals::current.compare_exchange_strong(self, nullptr);
  if (thread_.joinable()) {
    close(wake_pipe_[1]);  // the thread's read ends
    wake_pipe_[1] = -1;
    thread_.join();
  }
  if (wake_pipe_[0] >= 0) close(wake_pipe_[0]);
  if (wake_pipe_[1] >= 0) close(wake_pipe_[1]);
}

void FlightRecorder::serve_signals() {
  pthread_setname_np(pthread_self(), "hvd-flight");
  // Signals go to the runtime's other threads; this one only reads.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  char byte;
  while (true) {
    ssize_t n = read(wake_pipe_[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    dump("SIGUSR1");
  }
}

FlightRing* FlightRecorder::ring_for(int32_t set,
                                     const std::vector<int32_t>& world_ranks) {
  std::atomic<FlightRing*>& slot =
      rings_[static_cast<uint32_t>(set) % kRingSlots];
  FlightRing* ring = slot.load(std::memory_order_relaxed);
  if (ring && ring->set() == set) return ring;
  // A new set (or one more than kRingSlots sets back): its own ring. A
  // ring the slot held before stays alive for its ops still in flight.
  owned_.push_back(
      std::make_unique<FlightRing>(set, world_ranks, entries_, names_));
  slot.store(owned_.back().get(), std::memory_order_release);
  return owned_.back().get();
}

FlightEntry* FlightRecorder::entry_of(const PendingOp& op) {
  return op.flight_ring ? op.flight_ring->find(op.flight_seq) : nullptr;
}

void FlightRecorder::submitted(PendingOp& op,
                               const std::vector<int32_t>& world_ranks) {
  FlightRing* ring = ring_for(op.request.process_set, world_ranks);
  FlightEntry& e = ring->open();
  const uint64_t seq = ring->recorded() + 1;
  constexpr auto relaxed = std::memory_order_relaxed;
  e.name.store(op.name());
  e.collective.store(static_cast<uint8_t>(op.collective()), relaxed);
  e.dtype.store(static_cast<uint8_t>(op.request.dtype), relaxed);
  e.op.store(static_cast<uint8_t>(op.request.op), relaxed);
  uint64_t bytes = 0;
  for (const TensorView& v : op.inputs) bytes += v.bytes;
  e.bytes.store(bytes, relaxed);
  e.state.store(static_cast<uint8_t>(FlightState::kSubmitted), relaxed);
  e.submitted_ns.store(now_, relaxed);
  ring->publish(e, seq);
  op.flight_ring = ring;
  op.flight_seq = seq;
}

void FlightRecorder::negotiated(const PendingOp& op) {
  FlightEntry* e = entry_of(op);
  if (!e) return;
  e->negotiated_ns.store(now_, std::memory_order_relaxed);
  e->state.store(static_cast<uint8_t>(FlightState::kNegotiated),
                 std::memory_order_relaxed);
}

void FlightRecorder::posted(const PendingOp& op, uint8_t reducer,
                            uint8_t transport) {
  FlightEntry* e = entry_of(op);
  if (!e) return;
  e->reducer.store(reducer, std::memory_order_relaxed);
  e->transport.store(transport, std::memory_order_relaxed);
  e->posted_ns.store(now_, std::memory_order_relaxed);
  e->state.store(static_cast<uint8_t>(FlightState::kPosted),
                 std::memory_order_relaxed);
}

void FlightRecorder::done(const PendingOp& op, bool ok, int32_t peer) {
  FlightEntry* e = entry_of(op);
  if (!e) return;
  if (peer >= 0 && e->peer.load(std::memory_order_relaxed) < 0) {
    e->peer.store(peer, std::memory_order_relaxed);
  }
  e->done_ns.store(now_, std::memory_order_relaxed);
  e->state.store(static_cast<uint8_t>(ok ? FlightState::kDone
                                         : FlightState::kFailed),
                 std::memory_order_relaxed);
}

namespace {

bool finished(const FlightEntry& e) {
  const FlightState s = e.load_state();
  return s == FlightState::kDone || s == FlightState::kFailed ||
         s == FlightState::kEmpty;
}

}  // namespace

void FlightRecorder::blame(int32_t peer) {
  if (peer < 0) return;
  for (const auto& ring : owned_) {
    for (size_t i = 0; i < ring->capacity(); ++i) {
      auto& e = const_cast<FlightEntry&>(ring->at(i));
      if (!finished(e) && e.peer.load(std::memory_order_relaxed) < 0) {
        e.peer.store(peer, std::memory_order_relaxed);
      }
    }
  }
}

bool FlightRecorder::unfinished() const {
  for (const auto& ring : owned_) {
    for (size_t i = 0; i < ring->capacity(); ++i) {
      if (!finished(ring->at(i))) return true;
    }
  }
  return false;
}

namespace {

struct LogVisit {
  const FlightRing* ring;
  int64_t now;
  int32_t rank;
};

void log_entry(void* ctx, const FlightEntry& e) {
  auto* v = static_cast<LogVisit*>(ctx);
  char buf[512];
  FlightText line(buf, sizeof buf);
  line.add("[horovod rank ").add(v->rank).add(" flight] ");
  flight_line(*v->ring, e, v->now, line);
  line.add("\n");
  write_all(STDERR_FILENO, line.view());
}

}  // namespace

void FlightRecorder::dump(const char* reason) {
  if (dumping_.test_and_set(std::memory_order_acquire)) return;
  const int64_t now = steady_now();
  const FlightRing* rings[kRingSlots];
  size_t count = 0;
  for (auto& slot : rings_) {
    if (FlightRing* r = slot.load(std::memory_order_acquire)) {
      rings[count++] = r;
    }
  }
  char buf[1024];
  FlightText head(buf, sizeof buf);
  head.add("[horovod rank ").add(rank_).add(" flight] ");
  // The reason's first line (a stall's lists its ops on the next ones).
  std::string_view first_line(reason);
  first_line = first_line.substr(0, first_line.find('\n'));
  head.add("flight recorder dump (").add(first_line).add("): ");
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) total += rings[i]->recorded();
  head.add(static_cast<int64_t>(total)).add(" op(s) recorded in ");
  head.add(static_cast<int64_t>(count)).add(" process set(s), the last ");
  head.add(static_cast<int64_t>(count ? rings[0]->capacity() : entries_));
  head.add(" of each below; JSON: ");
  head.add(file_).add("\n");
  write_all(STDERR_FILENO, head.view());
  for (size_t i = 0; i < count; ++i) {
    LogVisit visit{rings[i], now, rank_};
    flight_each(*rings[i], log_entry, &visit);
  }
  FlightHeader header;
  header.rank = rank_;
  header.size = size_;
  header.pid = getpid();
  header.host = host_;
  header.reason = reason;
  header.now_ns = now;
  header.wall_offset_ns = wall_offset_ns_;
  write_file(header, rings, count);
  if (strncmp(reason, "failure", 7) == 0) failure_dumped_ = true;
  dumps_.fetch_add(1);
  dumping_.clear(std::memory_order_release);
}

void FlightRecorder::write_file(const FlightHeader& header,
                                const FlightRing* const* rings, size_t count) {
  char partial[sizeof file_ + 8];
  FlightText name(partial, sizeof partial);
  name.add(file_).add(".part");
  partial[name.view().size()] = '\0';
  if (!make_dirs(dir_)) return;
  int fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  flight_json(header, rings, count, sink_to_fd, &fd);
  close(fd);
  rename(partial, file_);
}

}  // namespace hvd::runtime
