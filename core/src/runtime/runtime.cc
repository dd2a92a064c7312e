#include "runtime/runtime.h"

#include <algorithm>
#include <map>
#include <utility>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "common/log.h"
#include "control/control_plane.h"
#include "p2p/engine.h"
#include "p2p/mesh.h"
#include "p2p/transport.h"
#include "plugin/abi_minors.h"
#include "plugin/loader.h"
#include "runtime/cycle.h"
#include "runtime/driver.h"
#include "runtime/executor.h"
#include "runtime/failure.h"
#include "runtime/flight_recorder.h"
#include "runtime/generation_bootstrap.h"
#include "runtime/op_intake.h"
#include "runtime/process_sets.h"
#include "runtime/reducers.h"
#include "runtime/stall_inspector.h"
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
  try {
    start(options);
  } catch (...) {
    teardown();  // in order
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

  failure_ = std::make_unique<Failure>(rank_, wakeup_);
  control_ = std::make_unique<ControlPlane>(*bootstrap_, config_);
  control_->on_failure([this](const PeerFailure& f) { failure_->note(f); });
  // An idle rank joins a round another rank began as soon as it is called.
  control_->on_round_called([this] { wakeup_.call_to_round(); });

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
        failure_->note_transport_fault(peer, reason);
      });
  // A member that stopped before it joined a native communicator would
  // keep the background thread in its creation until its timeout.
  engine_->set_interrupted([this] { return failure_->failed(); });
  p2p::build_mesh(*engine_, *loader_, config_, *bootstrap_, start_timeout);

  check_same_process_sets(options);
  sets_ = std::make_unique<ProcessSets>(rank_, layout.host_of, epoch);
  add_initial_sets(options);
  dynamic_sets_ = config_.get_bool("runtime.dynamic_process_sets");
  intake_ = std::make_unique<OpIntake>(
      rank_, config_.get_duration("runtime.spin_time"), *sets_, wakeup_,
      flight_.get());

  executor_ = std::make_unique<Executor>(
      *engine_, *reducers_,
      [this](PendingOp* op, hvd_status s, const std::string& m) {
        intake_->complete(op, s, m, failure_->transport_fault_peer());
      });
  executor_->set_timeline(&timeline_);
  executor_->set_flight_recorder(flight_.get());
  executor_->set_gpu_transports(config_.get_strings("transport.gpu"));
  failure_->attach({*control_, *engine_, *executor_, *sets_, *intake_,
                    flight_.get(),
                    std::min<std::chrono::nanoseconds>(
                        config_.get_duration("runtime.peer_timeout"),
                        std::chrono::seconds(1))});
  cycle_ = std::make_unique<Cycle>(
      config_, Cycle::Parts{rank_, *control_, *engine_, *reducers_,
                            *executor_, *sets_, *intake_, *failure_, wakeup_,
                            timeline_, stall_.get(), flight_.get()});
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
  if (!pinned.empty()) {
    HVD_LOG(INFO) << "waiting threads do not run the cycle: " << pinned
                  << " takes calls from the background thread only (its "
                     "table does not set threading = "
                     "HVD_THREADING_SERIALIZED)";
  }
  driver_ = std::make_unique<Driver>(Driver::Parts{
      rank_, *cycle_, *failure_, *intake_, *sets_, *executor_, *control_,
      *engine_, wakeup_, config_.get_duration("runtime.spin_time"),
      pinned.empty()});
  driver_->start();
  HVD_LOG(INFO) << "initialised: rank " << rank_ << " of " << size_
                << ", bootstrap " << bootstrap_->backend() << ", reducers "
                << reducers_->names();
}

void Runtime::add_initial_sets(const hvd_init_options* options) {
  std::vector<int32_t> everyone(size_);
  for (int32_t r = 0; r < size_; ++r) everyone[r] = r;
  sets_->add_initial(std::move(everyone));
  if (!options || options->process_set_count <= 0) return;
  if (!options->process_sets || !options->process_set_sizes) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "hvd_init: process_set_count without process_sets");
  }
  for (int32_t i = 0; i < options->process_set_count; ++i) {
    sets_->add_initial(std::vector<int32_t>(
        options->process_sets[i],
        options->process_sets[i] + options->process_set_sizes[i]));
  }
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

Runtime::~Runtime() {
  if (driver_) driver_->stop();
  teardown();
}

void Runtime::shutdown() {
  if (driver_) driver_->stop();
  teardown();
}

void Runtime::teardown() {
  // The driver and the cycle stay: a caller may still ask whether it runs
  // on the progress thread, and the cycle's cache-bit exchange outlives
  // the engine.
  if (intake_) intake_->close();
  executor_.reset();
  if (sets_) sets_->clear();
  engine_.reset();
  reducers_.reset();
  loader_.reset();
  control_.reset();
  bootstrap_.reset();
  timeline_.stop();
  core_binding_.restore();
}

std::string Runtime::background_thread_only_plugin() const {
  for (const auto& t : engine_->transports()) {
    if (!t->any_thread()) return t->describe();
  }
  for (size_t i = 0; i < reducers_->size(); ++i) {
    if (!called_from_any_thread(reducers_->at(i).api()))
      return reducers_->at(i).describe();
  }
  return "";
}

hvd_handle_s* Runtime::enqueue(const hvd_op& op) {
  return intake_->enqueue(op);
}

bool Runtime::drive_until_done(hvd_handle_s* handle,
                               std::chrono::nanoseconds spin,
                               std::chrono::steady_clock::time_point give_up) {
  return driver_->drive_until_done(handle, spin, give_up);
}

bool Runtime::on_progress_thread() const {
  return driver_ && driver_->on_progress_thread();
}

}  // namespace hvd::runtime
