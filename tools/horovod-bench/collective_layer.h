// `--layer collective`: a reducer task on the world team, as the runtime's
// executor runs one, without negotiation, fusion or the background thread.
// Set-up is the runtime's own: configuration, bootstrap, control plane (for
// failure detection), the reducers of reducer.load, and the point-to-point
// mesh. Each run posts a task to the planner's first candidate for the size
// (rules, then scores; falling through on HVD_ERR_UNSUPPORTED) and drives
// it with the engine's waiting: spin, then sleep on the transports' wait
// fds.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "layer.h"
#include "options.h"
#include "p2p/engine.h"
#include "runtime/core_binding.h"

namespace hvd {
class Bootstrap;
class ControlPlane;
class PluginLoader;
struct PeerFailure;
namespace runtime {
class NestedRunner;
class Reducer;
class ReducerSet;
}  // namespace runtime
}  // namespace hvd

namespace hvd_bench {

class CollectiveLayer : public Layer {
 public:
  // `config_path` as for hvd_init ("" searches). Collective over the job.
  CollectiveLayer(const std::string& config_path,
                  std::chrono::milliseconds op_timeout);
  ~CollectiveLayer() override;

  int rank() const override;
  int size() const override;
  std::string describe() const override;
  void prepare(const Shape& shape, Workload& workload) override;
  void run_once() override;
  std::string algorithm() const override;

  // The loaded reducers, in reducer.load order.
  std::vector<std::string> reducer_names() const;
  // Runs the next prepare()d shapes with this reducer only ("": the
  // planner's choice again). A reducer that does not offer a size makes
  // prepare() throw hvd::Error HVD_ERR_UNSUPPORTED.
  void use_reducer(const std::string& name);
  void barrier() override;
  std::vector<double> max_over_ranks(const std::vector<double>& mine) override;

 private:
  void on_failure(const hvd::PeerFailure& failure);
  // Throws the failure the control plane reported, if any, prefixed with
  // `context`.
  void throw_if_failed(const std::string& context);
  void drive(hvd_task* task, const hvd::runtime::Reducer& reducer);
  std::string what() const;  // "allreduce of N bytes (C float32)"

  std::chrono::milliseconds op_timeout_;
  hvd::Config config_;
  std::unique_ptr<hvd::Bootstrap> bootstrap_;
  std::unique_ptr<hvd::PluginLoader> loader_;
  std::unique_ptr<hvd::runtime::ReducerSet> reducers_;
  std::unique_ptr<hvd::runtime::NestedRunner> nested_;  // outlives engine_
  std::unique_ptr<hvd::p2p::Engine> engine_;  // set under failure_mutex_
  std::unique_ptr<hvd::p2p::Team> team_;
  // Declared after the engine, so it goes first: its failure callback,
  // which aborts the engine, never runs once the engine is gone.
  std::unique_ptr<hvd::ControlPlane> control_;
  int wake_fd_ = -1;  // written on a failure, to end the engine's sleep
  hvd::runtime::CoreBinding core_binding_;

  // The collective of the current shape.
  Shape shape_;
  hvd_coll_args args_{};
  std::vector<size_t> counts_, displs_;
  std::vector<size_t> candidates_;
  hvd_p2p_s context_;
  uint64_t sequence_ = 0;
  const hvd::runtime::Reducer* last_ = nullptr;
  int forced_ = -1;  // index of the reducer use_reducer() named

  // Set from the control plane's thread.
  std::mutex failure_mutex_;
  std::atomic<bool> failed_{false};
  std::string failure_message_;
  std::atomic<int> failure_rank_{-1};
};

}  // namespace hvd_bench
