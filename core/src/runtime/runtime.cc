#include "runtime/runtime.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <utility>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "common/log.h"
#include "control/control_plane.h"
#include "device/device.h"
#include "p2p/and_allreduce.h"
#include "p2p/engine.h"
#include "p2p/mesh.h"
#include "plugin/loader.h"
#include "runtime/autotune.h"
#include "runtime/executor.h"
#include "runtime/flight_recorder.h"
#include "runtime/fusion.h"
#include "runtime/generation_bootstrap.h"
#include "runtime/process_set.h"
#include "runtime/reducers.h"
#include "runtime/response_cache.h"
#include "runtime/stall_inspector.h"
#include "timeline/phases.h"
#include "timeline/plugin_hooks.h"

namespace hvd::runtime {
namespace {

std::string line_of(const std::string& canonical, const std::string& key) {
  size_t at = 0;
  while (at < canonical.size()) {
    size_t end = canonical.find('\n', at);
    if (end == std::string::npos) end = canonical.size();
    std::string line = canonical.substr(at, end - at);
    if (line.rfind(key + " =", 0) == 0 || line.rfind(key + "=", 0) == 0) {
      size_t eq = line.find('=');
      std::string value = line.substr(eq + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      return value;
    }
    at = end + 1;
  }
  return "(unset)";
}

}  // namespace

Runtime::Runtime(const hvd_init_options* options) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw Error(HVD_ERR_SYSTEM, "eventfd failed");
  try {
    start(options);
  } catch (...) {
    teardown();  // in order, then the descriptor the failure callback uses
    throw;
  }
}

void Runtime::start(const hvd_init_options* options) {
  if (options && !HVD_HAS_FIELD(options, hvd_init_options, process_set_count)) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "hvd_init: hvd_init_options of " +
                    std::to_string(options->struct_size) +
                    " bytes is too small (struct_size not set?)");
  }
  ConfigLoadOptions load;
  if (options && options->config_path) load.path = options->config_path;
  config_ = Config::load(load);
  hvd_log_level level;
  if (parse_log_level(config_.get_string("log.level"), &level)) {
    set_log_level(level);
  }
  set_log_hide_time(config_.get_bool("log.hide_time"));
  fusion_threshold_ = config_.get_bytes("runtime.fusion_threshold");
  cycle_time_ = config_.get_duration("runtime.cycle_time");
  spin_time_ = config_.get_duration("runtime.spin_time");
  const auto start_timeout = config_.get_duration("runtime.start_timeout");

  // The world epoch: 0, or the round of an elastic job's launcher.
  std::unique_ptr<Bootstrap> world = Bootstrap::create(config_);
  const uint64_t epoch = world->epoch();
  bootstrap_ = std::make_unique<GenerationBootstrap>(
      std::move(world), GenerationBootstrap::next_generation(epoch));
  rank_ = bootstrap_->rank();
  size_ = bootstrap_->size();
  const HostLayout& layout = bootstrap_->layout();
  local_rank_ = layout.local_rank;
  local_size_ = layout.local_size;
  cross_rank_ = layout.cross_rank;
  cross_size_ = layout.cross_size;
  {
    std::map<int, int> ranks_per_host;
    for (int host : layout.host_of) ++ranks_per_host[host];
    for (const auto& [host, count] : ranks_per_host) {
      if (count != ranks_per_host.begin()->second) homogeneous_ = false;
    }
  }
  set_log_rank(rank_);
  check_config_digest();
  start_diagnostics();

  control_ = std::make_unique<ControlPlane>(*bootstrap_, config_);
  control_->on_failure([this](const PeerFailure& f) { note_failure(f); });
  // An idle rank joins a round another rank began as soon as it is called.
  control_->on_round_called([this] {
    round_called_ = true;
    if (sleeping_) wake();
  });

  loader_ = std::make_unique<PluginLoader>(PluginLoader::default_search_path(
      config_.get_strings("plugins.search_path")));
  reducers_ = std::make_unique<ReducerSet>(*loader_, config_, *bootstrap_,
                                           timeline_hooks_.get());

  engine_ = std::make_unique<p2p::Engine>(rank_, size_, epoch);
  engine_->set_spin_time(config_.get_duration("runtime.spin_time"));
  // What a transport saw goes to the control plane from drive(), once the
  // control plane has had a moment to name the rank really at fault.
  engine_->set_failure_reporter(
      [this](int32_t peer, const std::string& reason) {
        if (transport_fault_peer_ >= 0) return;
        transport_fault_peer_ = peer;
        transport_fault_ = reason;
      });
  // A member that stopped before it joined a native communicator would
  // keep the background thread in its creation until its timeout.
  engine_->set_interrupted([this] { return failed_.load(); });
  verdict_wait_ = std::min<std::chrono::nanoseconds>(
      config_.get_duration("runtime.peer_timeout"), std::chrono::seconds(1));
  p2p::build_mesh(*engine_, *loader_, config_, *bootstrap_, start_timeout);

  check_same_process_sets(options);
  std::vector<int32_t> everyone(size_);
  for (int32_t r = 0; r < size_; ++r) everyone[r] = r;
  sets_.push_back(std::make_unique<ProcessSet>(
      0, everyone, rank_, layout.host_of, epoch, rank_ == 0));
  if (options && options->process_set_count > 0) {
    if (!options->process_sets || !options->process_set_sizes) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_init: process_set_count without process_sets");
    }
    for (int32_t i = 0; i < options->process_set_count; ++i) {
      std::vector<int32_t> ranks(
          options->process_sets[i],
          options->process_sets[i] + options->process_set_sizes[i]);
      sets_.push_back(std::make_unique<ProcessSet>(
          i + 1, std::move(ranks), rank_, layout.host_of, epoch, rank_ == 0));
    }
  }
  next_set_id_ = static_cast<int32_t>(sets_.size());
  dynamic_sets_ = config_.get_bool("runtime.dynamic_process_sets");
  cache_ = std::make_unique<ResponseCache>(static_cast<size_t>(
      std::max<int64_t>(0, config_.get_int("runtime.cache_capacity"))));
  cache_sync_ = std::make_unique<p2p::AndAllreduce>(*engine_, *sets_[0]->team);
  stall_check_ = config_.get_bool("stall_check.enabled");
  stall_fallback_ = config_.get_duration("stall_check.warning_time") / 10;
  start_autotune();

  executor_ = std::make_unique<Executor>(
      *engine_, *reducers_,
      [this](PendingOp* op, hvd_status s, const std::string& m) {
        complete(op, s, m);
      });
  executor_->set_timeline(&timeline_);
  executor_->set_flight_recorder(flight_.get());
  executor_->set_gpu_transports(config_.get_strings("transport.gpu"));
  // The background thread inherits the binding.
  const std::string threaded = threaded_transport(*engine_);
  if (config_.get_bool("runtime.bind_to_core") && !threaded.empty()) {
    HVD_LOG(INFO) << "not bound to a core (runtime.bind_to_core): transport '"
                  << threaded << "' may run threads of its own";
  } else if (config_.get_bool("runtime.bind_to_core")) {
    core_binding_.bind(local_rank_, local_size_);
    if (core_binding_.cpu() >= 0) {
      HVD_LOG(INFO) << "bound to CPU " << core_binding_.cpu() << ": "
                    << local_size_ << " rank(s) on this host fill its cores "
                    << "(runtime.bind_to_core)";
    }
  }
  const std::string pinned = background_thread_only_plugin();
  callers_may_drive_ = pinned.empty();
  if (!callers_may_drive_) {
    HVD_LOG(INFO) << "waiting threads do not run the cycle: " << pinned
                  << " takes calls from the background thread only (its "
                     "table does not set threading = "
                     "HVD_THREADING_SERIALIZED)";
  }
  thread_ = std::thread([this] { loop(); });
  HVD_LOG(INFO) << "initialised: rank " << rank_ << " of " << size_
                << ", bootstrap " << bootstrap_->backend() << ", reducers "
                << reducers_->names();
}

Runtime::~Runtime() {
  if (thread_.joinable()) {
    shutdown_requested_ = true;
    wake();
    thread_.join();
  }
  teardown();
}

void Runtime::teardown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  executor_.reset();
  sets_.clear();
  engine_.reset();
  cache_sync_.reset();
  reducers_.reset();
  loader_.reset();
  control_.reset();
  bootstrap_.reset();
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
  timeline_.stop();
  core_binding_.restore();
}

void Runtime::check_config_digest() {
  std::string digest = config_.digest();
  std::vector<std::vector<uint8_t>> all =
      bootstrap_->allgather(std::vector<uint8_t>(digest.begin(), digest.end()));
  int32_t differs = -1;
  for (int32_t r = 1; r < size_; ++r) {
    if (all[r] != all[0]) {
      differs = r;
      break;
    }
  }
  if (differs < 0) return;
  // Each canonical text is published under its digest, so a re-init that
  // finds an older value finds the same text.
  std::string canonical = config_.canonical();
  bootstrap_->put("hvd.config." + digest,
                  std::vector<uint8_t>(canonical.begin(), canonical.end()));
  auto fetch = [&](int32_t r) {
    if (r == rank_) return canonical;
    std::string key(all[r].begin(), all[r].end());
    std::vector<uint8_t> text = bootstrap_->get(
        r, "hvd.config." + key, std::chrono::milliseconds(30000));
    return std::string(text.begin(), text.end());
  };
  std::string a = fetch(0), b = fetch(differs);
  std::string keys;
  for (const std::string& key : Config::diff(a, b)) {
    keys += (keys.empty() ? "" : "; ") + key + " is " + line_of(a, key) +
            " on rank 0, " + line_of(b, key) + " on rank " +
            std::to_string(differs);
  }
  throw Error(HVD_ERR_CONFIG, "the configuration differs between ranks 0 and " +
                                  std::to_string(differs) + ": " + keys);
}

void Runtime::check_same_process_sets(const hvd_init_options* options) {
  // Every rank takes part, with or without sets, so none waits alone.
  std::string text;
  const int32_t count =
      options && options->process_sets && options->process_set_sizes
          ? options->process_set_count
          : 0;
  for (int32_t i = 0; i < count; ++i) {
    text += "set " + std::to_string(i + 1) + ":";
    for (int32_t k = 0; k < options->process_set_sizes[i]; ++k) {
      text += " " + std::to_string(options->process_sets[i][k]);
    }
    text += ";";
  }
  std::vector<std::vector<uint8_t>> all =
      bootstrap_->allgather(std::vector<uint8_t>(text.begin(), text.end()));
  for (int32_t r = 1; r < size_; ++r) {
    if (all[r] != all[0]) {
      throw Error(HVD_ERR_MISMATCH,
                  "hvd_init: the process sets differ between rank 0 (" +
                      std::string(all[0].begin(), all[0].end()) +
                      ") and rank " + std::to_string(r) + " (" +
                      std::string(all[r].begin(), all[r].end()) + ")");
    }
  }
}

ProcessSet* Runtime::find_set(int32_t id) const {
  for (const auto& s : sets_) {
    if (s->id == id) return s.get();
  }
  return nullptr;
}

std::string Runtime::key_of(const PendingOp& op) {
  std::string key = std::to_string(op.request.process_set) + "/";
  if (op.collective() == HVD_COLL_JOIN) return key + "join";
  return key + op.name();
}

hvd_handle_s* Runtime::enqueue(const hvd_op& op,
                               const std::function<void(Request&)>& adjust) {
  std::unique_ptr<PendingOp> p;
  hvd_handle_s* handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) {
      if (stop_status_ == HVD_ERR_SHUT_DOWN && shutdown_rank_ != rank_ &&
          !early_shutdown_logged_) {
        early_shutdown_logged_ = true;
        HVD_LOG(ERROR) << "rank " << shutdown_rank_
                       << " shut down (hvd_shutdown) while rank " << rank_
                       << " still submits ops";
      }
      throw Error(stop_status_, stop_message_);
    }
    ProcessSet* set = find_set(op.process_set);
    if (!set) {
      throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_enqueue: process set " +
                                                std::to_string(op.process_set) +
                                                " does not exist");
    }
    if (!set->member()) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_enqueue: rank " + std::to_string(rank_) +
                      " is not a member of process set " +
                      std::to_string(set->id));
    }
    uint64_t& counter = set->unnamed;
    const char* kind = op.collective == HVD_COLL_JOIN ? "join." : "barrier.";
    p = std::make_unique<PendingOp>(make_pending_op(
        op, set->size(), set->rank, kind + std::to_string(counter)));
    if (adjust) adjust(p->request);
    std::string key = key_of(*p);
    if (in_flight_.count(key)) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  p->describe() +
                      ": an op of this name is already in flight "
                      "on process set " +
                      std::to_string(set->id) +
                      " (names must be unique among ops in flight)");
    }
    if (p->adapter) adapter_acquire(p->adapter);
    if ((!op.name || !*op.name) &&
        (op.collective == HVD_COLL_BARRIER || op.collective == HVD_COLL_JOIN)) {
      ++counter;
    }
    p->handle = make_handle();
    p->handle->spin = spin_time_;
    handle = p->handle;
    in_flight_.insert(std::move(key));
    // From here the background thread owns the op (and may finish it at
    // once).
    submitted_.push_back(p.release());
  }
  const int64_t now =
      std::chrono::steady_clock::now().time_since_epoch().count();
  last_new_ns_.store(now, std::memory_order_relaxed);
  if (!has_new_.exchange(true)) {
    first_new_ns_.store(now, std::memory_order_relaxed);
  }
  if (sleeping_) wake();
  return handle;
}

void Runtime::wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof one);
  (void)n;
  // After the write: a drain that finds the flag set finds the count too.
  wake_written_.store(true, std::memory_order_release);
}

void Runtime::drain_wake_fd() {
  // Most waits end without a wake (a spin's yield): no system call then.
  if (!wake_written_.exchange(false, std::memory_order_acq_rel)) return;
  uint64_t value;
  ssize_t n = read(wake_fd_, &value, sizeof value);
  (void)n;
}

void Runtime::note_failure(const PeerFailure& failure) {
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failed_) return;
    failure_rank_ = failure.rank;
    failure_message_ =
        "rank " + std::to_string(failure.rank) + " failed: " + failure.reason;
  }
  failed_ = true;
  wake();  // the background thread fails everything
}

void Runtime::complete(PendingOp* op, hvd_status status,
                       const std::string& message) {
  std::string text = message;
  if (status != HVD_OK && text.empty()) text = op->describe() + " failed";
  if (flight_) {
    flight_->done(*op, status == HVD_OK,
                  status == HVD_OK ? -1 : transport_fault_peer_);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_.erase(key_of(*op));
  }
  if (op->adapter) {
    op->adapter->api->done(op->adapter->ctx, op->adapter_op, status,
                           text.c_str());
    adapter_release(op->adapter);
  }
  if (op->done) op->done(op->user, status, text.c_str());
  // Freed before the waiter wakes: where it shares this thread's core, it
  // runs as soon as this thread yields.
  hvd_handle_s* handle = op->handle;
  delete op;
  finish_handle(handle, status, text);
  unref_handle(handle);
}

bool Runtime::input_ready(PendingOp* op) {
  if (op->adapter && op->adapter->api->ready) {
    hvd_status s = op->adapter->api->ready(op->adapter->ctx, op->adapter_op);
    if (s == HVD_AGAIN) return false;
    if (s != HVD_OK) {
      throw Error(s, op->describe() + ": adapter '" + op->adapter->name +
                         "' reported its inputs failed (" + status_name(s) +
                         ")");
    }
  }
  if (op->ready_event) {
    const hvd_device_api* dev = device_api();
    hvd_status s = dev->event_query(dev->ctx, op->ready_event);
    if (s == HVD_AGAIN) return false;
    if (s != HVD_OK) {
      throw Error(s, op->describe() + ": its ready event failed (" +
                         status_name(s) + ")");
    }
  }
  return true;
}

void Runtime::gather_requests(const Held& progress) {
  last_cycle_ = std::chrono::steady_clock::now();
  if (flight_) flight_->tick(last_cycle_);
  if (timeline_.on()) cycle_start_ns_ = timeline::Timeline::now();
  if (!retired_sets_.empty() && executor_->idle()) retired_sets_.clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming_.swap(submitted_);
  }
  for (PendingOp* op : incoming_) {
    if (find_set(op->request.process_set)) {
      waiting_.push_back(op);
    } else {  // removed since it was enqueued
      complete(op, HVD_ERR_ABORTED,
               prefixed(*op, "process set " +
                                 std::to_string(op->request.process_set) +
                                 " was removed (hvd_remove_process_set)"));
    }
  }
  incoming_.clear();

  requests_.shutdown = shutdown_requested_;
  requests_.requests.clear();
  size_t kept = 0;
  for (PendingOp* op : waiting_) {
    bool ready = false;
    try {
      ready = input_ready(op);
    } catch (const Error& e) {
      // Submitted anyway, marked: the op fails on every rank with this
      // message rather than leaving the others waiting for this rank.
      HVD_LOG(ERROR) << e.what();
      op->request.failure_status = e.status();
      op->request.failure = e.what();
      ready = true;
    }
    if (!ready) {
      waiting_[kept++] = op;
      continue;
    }
    ProcessSet* set = find_set(op->request.process_set);
    if (timeline_.on()) {
      timeline_.begin(timeline_.intern(op->name()),
                      timeline::negotiate_phase(op->collective()));
    }
    if (stall_check_) op->negotiating_since = std::chrono::steady_clock::now();
    if (flight_) flight_->submitted(*op, set->world_ranks);
    op->state = OpState::kNegotiating;
    if (op->collective() == HVD_COLL_JOIN) {
      set->join = op;
    } else {
      set->negotiating.emplace(op->name(), op);
    }
    if (cache_->capacity() > 0 && op->request.failure_status == HVD_OK &&
        op->collective() != HVD_COLL_JOIN &&
        op->collective() != HVD_COLL_BARRIER &&
        op->collective() != HVD_COLL_ALLTOALL) {
      op->state = OpState::kAwaitingCacheBits;
      cached_waiting_.push_back(op);
      continue;
    }
    requests_.requests.push_back(op->request);
  }
  waiting_.resize(kept);
  offer_cached(progress);
}

void Runtime::run_responses(const Held& progress, ResponseList& list) {
  // Idle: nothing negotiated, nothing running (runtime_progress.cc).
  idle_rounds_ =
      list.responses.empty() && executor_->idle() ? idle_rounds_ + 1 : 0;
  apply_cache(progress, list);
  apply_tuning(list);
  if (timeline_.on()) mark_cycle(list);
  for (Response& r : list.responses) {
    if (r.set_change != SetChange::kNone) {
      apply_set_change(progress, r);
      continue;
    }
    ProcessSet* set = find_set(r.process_set);
    if (set && r.kind == ResponseKind::kData &&
        response_bytes(r, set->size()) > kQuietBytes) {
      data_path_quiet_ = false;  // on every rank, members or not
    }
    if (!set || !set->member()) continue;
    if (timeline_.on()) mark_negotiated(*set, r);
    // Queued ops wait on no other rank (reasons_to_negotiate).
    if (set->id != 0 || stall_check_) mark_queued(*set, r);
    executor_->push(set, std::move(r));
  }
  if (list.shutdown) {
    shutdown_seen_ = true;
    shutdown_rank_ = list.shutdown_rank;
  }
}

void Runtime::coordinate(const Held& progress,
                         const std::vector<std::vector<uint8_t>>& gathered,
                         ResponseList& out) {
  std::vector<RequestList> lists(gathered.size());
  for (int32_t r = 0; r < static_cast<int32_t>(gathered.size()); ++r) {
    lists[r] = decode_requests(gathered[r]);
  }
  coordinate_cached(progress, lists, out);
  for (int32_t r = 0; r < static_cast<int32_t>(gathered.size()); ++r) {
    RequestList& list = lists[r];
    out.busy = out.busy || list.busy;
    if (list.shutdown && !out.shutdown) {
      out.shutdown = true;
      out.shutdown_rank = r;
    }
    for (Request& q : list.requests) {
      ProcessSet* set = find_set(q.process_set);
      if (!set || set->rank_of_world[r] < 0) {
        throw Error(HVD_ERR_INTERNAL,
                    "rank " + std::to_string(r) + " submitted '" + q.name +
                        "' to process set " + std::to_string(q.process_set) +
                        ", which it is not a member of");
      }
      if (timeline_.on()) timeline_.arrived(timeline_.intern(q.name), r);
      if (stall_) note_submitted(*set, set->rank_of_world[r], q);
      set->coordinator->submit(set->rank_of_world[r], std::move(q));
    }
  }
  for (const auto& set : sets_) {
    std::vector<Response> ready = set->coordinator->take_ready();
    if (ready.empty()) continue;
    if (stall_) {
      for (const Response& r : ready) {
        if (r.kind == ResponseKind::kJoin) stall_->joins_resolved(set->id);
        for (const Entry& e : r.entries) stall_->resolved(set->id, e.name);
      }
    }
    for (Response& r : fuse(std::move(ready), fusion_threshold_, set->size())) {
      plan(r, *set);
      out.responses.push_back(std::move(r));
    }
  }
}

bool Runtime::drive(const Held& progress) {
  try {
    return executor_->progress();
  } catch (const Error& e) {
    data_path_failed(progress, e);
  }
}

void Runtime::data_path_failed(const Held&, const Error& e) {
  const int32_t peer =
      transport_fault_peer_ >= 0 ? transport_fault_peer_ : e.peer();
  if (peer < 0 || peer == rank_) {
    // This rank's own failure: tell everyone, so none waits for its part.
    if (!failed_) control_->report_failure(rank_, e.what());
    throw e;
  }
  // A broken connection may be a cascade (a survivor closing its
  // connections after another rank died): the control plane knows which
  // rank is at fault, so it has the last word. If it stays silent, what
  // the data path saw is reported.
  await_verdict();
  if (!failed_) {
    control_->report_failure(
        peer, transport_fault_.empty() ? e.what() : transport_fault_);
    await_verdict();
  }
  if (failed_) {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    throw Error(HVD_ERR_PEER_FAILED, failure_message_, failure_rank_);
  }
  throw e;
}

void Runtime::await_verdict() {
  auto until = std::chrono::steady_clock::now() + verdict_wait_;
  while (!failed_ && std::chrono::steady_clock::now() < until) {
    pollfd fd{wake_fd_, POLLIN, 0};
    poll(&fd, 1, 5);
    drain_wake_fd();
  }
}

void Runtime::fail_everything(const Held&, hvd_status status,
                              const std::string& message) {
  record_failure(status, message);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    stop_status_ = status;
    stop_message_ = message;
  }
  if (status != HVD_ERR_SHUT_DOWN) {
    int32_t peer;
    {
      std::lock_guard<std::mutex> lock(failure_mutex_);
      peer = failure_rank_;
    }
    engine_->abort(status, peer);
  }
  executor_->fail_all(status, message);
  auto fail = [&](PendingOp* op) {
    complete(op, status, prefixed(*op, message));
  };
  for (auto* sets : {&sets_, &retired_sets_}) {
    for (const auto& set : *sets) {
      for (auto& [name, op] : set->negotiating) fail(op);
      set->negotiating.clear();
      if (set->join) fail(set->join);
      set->join = nullptr;
    }
  }
  cached_waiting_.clear();  // their ops are the sets' negotiating ones
  for (PendingOp* op : waiting_) fail(op);
  waiting_.clear();
  std::vector<PendingOp*> late;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    late.swap(submitted_);
  }
  for (PendingOp* op : late) fail(op);
}

void Runtime::shutdown() {
  if (thread_.joinable()) {
    shutdown_requested_ = true;
    wake();
    thread_.join();
  }
  teardown();
}

}  // namespace hvd::runtime
