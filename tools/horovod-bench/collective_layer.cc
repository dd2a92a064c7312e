#include "collective_layer.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "common/log.h"
#include "control/control_plane.h"
#include "p2p/mesh.h"
#include "plugin/loader.h"
#include "runtime/nested.h"
#include "runtime/reducers.h"

namespace hvd_bench {
namespace {

using hvd::Error;

// The world epoch of a job that is never rebuilt (as the runtime's).
constexpr uint64_t kEpoch = 0;

std::vector<uint8_t> encode(const std::vector<double>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(double));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<double> decode(const std::vector<uint8_t>& bytes) {
  std::vector<double> values(bytes.size() / sizeof(double));
  if (!values.empty())
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(double));
  return values;
}

void check_digests(const hvd::Config& config, hvd::Bootstrap& bootstrap) {
  std::string digest = config.digest();
  auto all =
      bootstrap.allgather(std::vector<uint8_t>(digest.begin(), digest.end()));
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) {
      throw Error(HVD_ERR_CONFIG,
                  "the configuration differs between ranks 0 and " +
                      std::to_string(r) +
                      " (horovod-info on each shows the effective values)");
    }
  }
}

}  // namespace

CollectiveLayer::CollectiveLayer(const std::string& config_path,
                                 std::chrono::milliseconds op_timeout)
    : op_timeout_(op_timeout) {
  hvd::ConfigLoadOptions load;
  load.path = config_path;
  config_ = hvd::Config::load(load);
  hvd_log_level level;
  if (hvd::parse_log_level(config_.get_string("log.level"), &level)) {
    hvd::set_log_level(level);
  }
  hvd::set_log_hide_time(config_.get_bool("log.hide_time"));

  bootstrap_ = hvd::Bootstrap::create(config_);
  const int me = bootstrap_->rank(), n = bootstrap_->size();
  hvd::set_log_rank(me);
  check_digests(config_, *bootstrap_);

  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0)
    throw Error(HVD_ERR_SYSTEM,
                std::string("eventfd: ") + std::strerror(errno));
  control_ = std::make_unique<hvd::ControlPlane>(*bootstrap_, config_);
  control_->on_failure([this](const hvd::PeerFailure& f) { on_failure(f); });

  loader_ = std::make_unique<hvd::PluginLoader>(
      hvd::PluginLoader::default_search_path(
          config_.get_strings("plugins.search_path")));
  reducers_ = std::make_unique<hvd::runtime::ReducerSet>(*loader_, config_,
                                                         *bootstrap_);

  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    engine_ = std::make_unique<hvd::p2p::Engine>(me, n, kEpoch);
  }
  nested_ = std::make_unique<hvd::runtime::NestedRunner>(*reducers_);
  engine_->set_nested(nested_.get());
  engine_->set_spin_time(config_.get_duration("runtime.spin_time"));
  engine_->set_failure_reporter(
      [this](int32_t peer, const std::string& reason) {
        control_->report_failure(peer, reason);
      });
  hvd::p2p::build_mesh(*engine_, *loader_, config_, *bootstrap_,
                       config_.get_duration("runtime.start_timeout"));
  // As hvd_init does, so both layers run where the ranks' threads would.
  if (config_.get_bool("runtime.bind_to_core") &&
      hvd::runtime::threaded_transport(*engine_).empty()) {
    core_binding_.bind(bootstrap_->layout().local_rank,
                       bootstrap_->layout().local_size);
  }

  std::vector<int32_t> everyone(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) everyone[static_cast<size_t>(r)] = r;
  team_ = std::make_unique<hvd::p2p::Team>(
      everyone, me, bootstrap_->layout().host_of, kEpoch, 0);
}

CollectiveLayer::~CollectiveLayer() {
  core_binding_.restore();
  control_.reset();
  if (wake_fd_ >= 0) close(wake_fd_);
}

int CollectiveLayer::rank() const { return bootstrap_->rank(); }
int CollectiveLayer::size() const { return bootstrap_->size(); }

std::string CollectiveLayer::describe() const {
  std::string text = "collective layer, bootstrap " + bootstrap_->backend();
  for (const auto& t : engine_->transports()) {
    text += ", transport." + t->scope() + " " + t->describe();
  }
  return text + ", reducers " + reducers_->names();
}

std::string CollectiveLayer::what() const {
  return std::string(collective_name(shape_.collective)) + " of " +
         std::to_string(shape_.bytes()) + " bytes (" +
         std::to_string(shape_.count) + " " + dtype_label(shape_.dtype) + ")";
}

void CollectiveLayer::prepare(const Shape& shape, Workload& workload) {
  shape_ = shape;
  const size_t n = static_cast<size_t>(size());
  args_ = hvd_coll_args{};
  args_.struct_size = sizeof(args_);
  args_.collective = shape.collective;
  args_.dtype = shape.dtype;
  args_.op = HVD_OP_SUM;
  args_.send = workload.send();
  args_.recv = workload.recv();
  args_.count = shape.count;
  args_.root = 0;
  args_.prescale = 1.0;
  args_.postscale = 1.0;
  args_.device = hvd_device{HVD_MEM_HOST, 0};
  counts_.assign(n, shape.block);
  displs_.resize(n);
  for (size_t r = 0; r < n; ++r) displs_[r] = r * shape.block;
  switch (shape.collective) {
    case HVD_COLL_ALLGATHER:
      args_.count = shape.send_count;
      args_.counts = counts_.data();
      args_.displs = displs_.data();
      break;
    case HVD_COLL_ALLTOALL:
      args_.counts = counts_.data();
      args_.displs = displs_.data();
      args_.send_counts = counts_.data();
      args_.send_displs = displs_.data();
      break;
    case HVD_COLL_REDUCESCATTER:
      args_.counts = counts_.data();
      args_.displs = displs_.data();
      break;
    case HVD_COLL_BROADCAST:
      args_.send = nullptr;
      break;
    default:
      break;
  }
  candidates_ = reducers_->candidates(shape.collective, team_->view(),
                                      HVD_MEM_HOST, shape.bytes());
  if (forced_ >= 0) {
    const size_t only = static_cast<size_t>(forced_);
    if (std::find(candidates_.begin(), candidates_.end(), only) ==
        candidates_.end()) {
      throw Error(HVD_ERR_UNSUPPORTED,
                  reducers_->at(only).name() + " does not offer " + what() +
                      " on " + std::to_string(n) + " rank(s)");
    }
    candidates_.assign(1, only);
  }
  if (candidates_.empty()) {
    throw Error(HVD_ERR_UNSUPPORTED,
                "no reducer offers " + what() + " on " + std::to_string(n) +
                    " rank(s) (loaded: " + reducers_->names() + ")");
  }
}

void CollectiveLayer::run_once() {
  // what() builds a string: only for a failure, not on every timed run.
  if (failed_) throw_if_failed(what());
  engine_->reset_context(&context_, team_.get(), 0, sequence_++);
  std::string unsupported;
  for (size_t index : candidates_) {
    const hvd::runtime::Reducer& reducer = reducers_->at(index);
    hvd_task* task = nullptr;
    hvd_status s = reducer.api().post(
        reducer.instance(), &args_, hvd::p2p::Engine::api(), &context_, &task);
    if (s == HVD_ERR_UNSUPPORTED) {
      unsupported += "; " + reducer.error("unsupported");
      continue;
    }
    if (s != HVD_OK)
      throw Error(s, what() + ": " + reducer.error("post failed"));
    drive(task, reducer);
    last_ = &reducer;
    return;
  }
  throw Error(HVD_ERR_UNSUPPORTED, "no reducer runs " + what() + " on " +
                                       std::to_string(size()) + " rank(s)" +
                                       unsupported);
}

void CollectiveLayer::drive(hvd_task* task,
                            const hvd::runtime::Reducer& reducer) {
  const auto& api = reducer.api();
  // Set at the first poll that finds the task unfinished: a task done at
  // once costs no clock read.
  std::chrono::steady_clock::time_point deadline{};
  bool aborted = false;
  std::string abort_reason;
  for (;;) {
    hvd_completion c{};
    c.struct_size = sizeof(c);
    c.peer = -1;
    hvd_status s = api.progress(task, &c);
    if (s == HVD_OK) break;
    if (s != HVD_AGAIN) {
      api.task_free(task);
      throw_if_failed(what());
      if (aborted) throw Error(HVD_ERR_TIMEOUT, abort_reason);
      std::string message =
          what() + ": " +
          reducer.error(std::string("failed (") + hvd::status_name(s) + ")");
      const std::string& detail = engine_->last_error();
      if (!detail.empty()) message += " [" + detail + "]";
      if (c.peer >= 0)
        message += " (rank " + std::to_string(c.peer) + " at fault)";
      throw Error(s, message, c.peer);
    }
    const auto now = std::chrono::steady_clock::now();
    if (deadline == std::chrono::steady_clock::time_point{}) {
      deadline = now + op_timeout_;
    }
    if (aborted && now > deadline) {
      // The reducer ignores its abort: leave the task (the bench ends).
      throw_if_failed(what());
      throw Error(HVD_ERR_TIMEOUT, abort_reason);
    }
    if (!aborted && (failed_ || now > deadline)) {
      // The next progress() fails; the failure is reported from there.
      aborted = true;
      deadline = now + std::chrono::seconds(5);
      abort_reason = what() + " did not finish within " +
                     std::to_string(op_timeout_.count() / 1000) +
                     " s (--timeout) on rank " + std::to_string(rank()) +
                     ", with " + reducer.describe();
      api.abort_task(task, failed_ ? HVD_ERR_PEER_FAILED : HVD_ERR_TIMEOUT,
                     failure_rank_);
      continue;
    }
    engine_->progress();
    engine_->wait(std::chrono::milliseconds(1), wake_fd_);
  }
  api.task_free(task);
}

std::vector<std::string> CollectiveLayer::reducer_names() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < reducers_->size(); ++i)
    names.push_back(reducers_->at(i).name());
  return names;
}

void CollectiveLayer::use_reducer(const std::string& name) {
  forced_ = name.empty() ? -1 : reducers_->index_of(name);
  if (!name.empty() && forced_ < 0) {
    throw Error(HVD_ERR_CONFIG, "reducer '" + name + "' is not loaded (" +
                                    reducers_->names() + ")");
  }
}

std::string CollectiveLayer::algorithm() const {
  return last_ ? last_->name() : "-";
}

void CollectiveLayer::barrier() {
  throw_if_failed("barrier");
  control_->gather({});
  control_->broadcast({});
}

std::vector<double> CollectiveLayer::max_over_ranks(
    const std::vector<double>& mine) {
  throw_if_failed("exchange of results");
  std::vector<std::vector<uint8_t>> all = control_->gather(encode(mine));
  std::vector<double> result = mine;
  for (const auto& bytes : all) {
    std::vector<double> theirs = decode(bytes);
    if (theirs.size() != result.size()) {
      throw Error(HVD_ERR_INTERNAL, "ranks sent results of different lengths");
    }
    for (size_t i = 0; i < result.size(); ++i)
      result[i] = std::max(result[i], theirs[i]);
  }
  return decode(control_->broadcast(encode(result)));
}

void CollectiveLayer::on_failure(const hvd::PeerFailure& failure) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (failed_) return;
  failure_message_ = failure.reason;
  failure_rank_ = failure.rank;
  failed_ = true;
  if (engine_) engine_->abort(HVD_ERR_PEER_FAILED, failure.rank);
  uint64_t one = 1;
  ssize_t ignored = write(wake_fd_, &one, sizeof one);
  (void)ignored;
}

void CollectiveLayer::throw_if_failed(const std::string& context) {
  if (!failed_) return;
  std::lock_guard<std::mutex> lock(failure_mutex_);
  std::string message = failure_message_;
  if (failure_rank_ >= 0 &&
      message.find("rank " + std::to_string(failure_rank_)) ==
          std::string::npos) {
    message = "rank " + std::to_string(failure_rank_) + " failed: " + message;
  }
  throw Error(HVD_ERR_PEER_FAILED, context + ": " + message, failure_rank_);
}

}  // namespace hvd_bench
