// `--layer runtime`: each run is one named op through the public C API
// (hvd_enqueue, then hvd_wait), negotiated and executed by the background
// thread as a framework's would be. The same name and buffers serve every
// iteration of a size. allgather and alltoall outputs are handed to the
// core through a registered adapter, so they land in the bench's own
// buffer as a framework binding's would.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "horovod/horovod.h"
#include "layer.h"

namespace hvd_bench {

class RuntimeLayer : public Layer {
 public:
  // hvd_init with `config_path` ("" searches). Collective over the job.
  RuntimeLayer(const std::string& config_path,
               std::chrono::milliseconds op_timeout);
  ~RuntimeLayer() override;  // hvd_shutdown

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override;
  void prepare(const Shape& shape, Workload& workload) override;
  void run_once() override;
  std::string algorithm() const override { return algorithm_; }
  void barrier() override;
  std::vector<double> max_over_ranks(const std::vector<double>& mine) override;

  // Where the adapter puts an allgather or alltoall output.
  struct OutputSlot {
    void* data = nullptr;
    uint64_t capacity = 0;
    int64_t shape[8] = {};
  };

 private:
  void run(const hvd_op& op, const std::string& what);
  std::string reducer_for(const Shape& shape) const;

  std::chrono::milliseconds op_timeout_;
  hvd::Config config_;  // the same file hvd_init reads: for the rules
  int rank_ = 0, size_ = 1;
  hvd_adapter* adapter_ = nullptr;

  Shape shape_;
  std::string name_, what_, algorithm_ = "-";
  int64_t input_shape_[1] = {0}, output_shape_[1] = {0};
  hvd_tensor input_{}, output_{};
  hvd_op op_{};
  OutputSlot slot_;
};

}  // namespace hvd_bench
