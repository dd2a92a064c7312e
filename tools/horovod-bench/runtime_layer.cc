#include "runtime_layer.h"

#include "common/error.h"
#include "horovod_plugin/enums.h"
#include "options.h"

namespace hvd_bench {
namespace {

using hvd::Error;

hvd_status allocate_output(void*, void* op_ctx, int32_t index,
                           const hvd_tensor* like, int32_t ndim,
                           const int64_t* shape, hvd_tensor* out) {
  auto* slot = static_cast<RuntimeLayer::OutputSlot*>(op_ctx);
  if (index != 0 || ndim < 0 || ndim > 8) return HVD_ERR_INVALID_ARGUMENT;
  uint64_t elements = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    slot->shape[d] = shape[d];
    elements *= static_cast<uint64_t>(shape[d]);
  }
  if (elements * like->dtype.bits / 8 > slot->capacity)
    return HVD_ERR_INVALID_ARGUMENT;
  *out = hvd_tensor{};
  out->struct_size = sizeof(hvd_tensor);
  out->data = slot->data;
  out->device = like->device;
  out->ndim = ndim;
  out->dtype = like->dtype;
  out->shape = slot->shape;
  return HVD_OK;
}

void op_done(void*, void*, hvd_status, const char*) {}

const hvd_adapter_api kAdapter = {
    sizeof(hvd_adapter_api),
    nullptr,
    HVD_PLUGIN_ADAPTER,
    HVD_ABI_VERSION_MAJOR,
    HVD_ABI_VERSION_MINOR,
    "horovod-bench",
    "1",
    allocate_output,
    nullptr,
    op_done,
    // Its callbacks only note the op: a waiting thread may run them, so
    // the runtime layer is timed as an application's waits drive it.
    HVD_THREADING_SERIALIZED,
};

hvd_tensor host_tensor(void* data, hvd_dtype dtype, const int64_t* shape) {
  hvd_tensor t{};
  t.struct_size = sizeof(t);
  t.data = data;
  t.device = hvd_device{HVD_MEM_HOST, 0};
  t.ndim = 1;
  t.dtype = hvd_plugin::dl_dtype(dtype);
  t.shape = shape;
  return t;
}

hvd_op blank_op(hvd_collective collective, const char* name) {
  hvd_op op{};
  op.struct_size = sizeof(op);
  op.collective = collective;
  op.name = name;
  op.op = HVD_OP_SUM;
  return op;
}

}  // namespace

RuntimeLayer::RuntimeLayer(const std::string& config_path,
                           std::chrono::milliseconds op_timeout)
    : op_timeout_(op_timeout) {
  hvd::ConfigLoadOptions load;
  load.path = config_path;
  config_ = hvd::Config::load(load);
  if (hvd_register_adapter(&kAdapter, nullptr, &adapter_) != HVD_OK) {
    throw Error(HVD_ERR_INTERNAL,
                std::string("hvd_register_adapter: ") + hvd_last_error());
  }
  hvd_init_options init{};
  init.struct_size = sizeof(init);
  init.config_path = config_path.empty() ? nullptr : config_path.c_str();
  hvd_status s = hvd_init(&init);
  if (s != HVD_OK) {
    std::string message = hvd_last_error();
    hvd_unregister_adapter(adapter_);
    throw Error(s, "hvd_init: " + message);
  }
  rank_ = hvd_rank();
  size_ = hvd_size();
}

RuntimeLayer::~RuntimeLayer() {
  hvd_shutdown();
  hvd_unregister_adapter(adapter_);
}

std::string RuntimeLayer::describe() const {
  auto list = [&](const std::string& key) {
    std::string out;
    for (const std::string& name : config_.get_strings(key)) {
      out += (out.empty() ? "" : "|") + name;
    }
    return out;
  };
  return "runtime layer (hvd_enqueue + hvd_wait), transport.intra " +
         list("transport.intra") + ", transport.inter " +
         list("transport.inter") + ", reducers " + list("reducer.load");
}

std::string RuntimeLayer::reducer_for(const Shape& shape) const {
  for (const hvd::ReducerRule& rule : config_.rules(shape.collective)) {
    if (shape.bytes() >= rule.min_bytes && shape.bytes() < rule.max_bytes) {
      return rule.reducer;
    }
  }
  return "auto";
}

void RuntimeLayer::prepare(const Shape& shape, Workload& workload) {
  shape_ = shape;
  name_ = std::string("horovod-bench.") + collective_name(shape.collective) +
          "." + std::to_string(shape.bytes());
  // The runtime's messages name the tensor.
  what_ = std::string(collective_name(shape.collective)) + " of " +
          std::to_string(shape.bytes()) + " bytes (" +
          std::to_string(shape.count) + " " + dtype_label(shape.dtype) + ")";
  algorithm_ = reducer_for(shape);
  op_ = blank_op(shape.collective, name_.c_str());
  op_.tensor_count = 1;
  op_.inputs = &input_;
  input_shape_[0] = static_cast<int64_t>(shape.send_count);
  output_shape_[0] = static_cast<int64_t>(shape.recv_count);
  switch (shape.collective) {
    case HVD_COLL_BROADCAST:  // in place, in the output buffer
      input_ = host_tensor(workload.recv(), shape.dtype, input_shape_);
      op_.root = 0;
      break;
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_ALLTOALL:
      input_ = host_tensor(workload.send(), shape.dtype, input_shape_);
      slot_.data = workload.recv();
      slot_.capacity = shape.recv_count * shape.element_bytes;
      op_.adapter = adapter_;
      op_.adapter_op = &slot_;
      break;
    default:  // allreduce, reducescatter: out of place
      input_ = host_tensor(workload.send(), shape.dtype, input_shape_);
      output_ = host_tensor(workload.recv(), shape.dtype, output_shape_);
      op_.outputs = &output_;
      break;
  }
}

void RuntimeLayer::run_once() { run(op_, what_); }

void RuntimeLayer::run(const hvd_op& op, const std::string& what) {
  hvd_handle* handle = nullptr;
  hvd_status s = hvd_enqueue(&op, &handle);
  if (s != HVD_OK) throw Error(s, what + ": hvd_enqueue: " + hvd_last_error());
  s = hvd_wait(handle, op_timeout_.count());
  if (s == HVD_OK) {
    hvd_release(handle);
    return;
  }
  std::string message = s == HVD_ERR_TIMEOUT
                            ? "did not finish within " +
                                  std::to_string(op_timeout_.count() / 1000) +
                                  " s (--timeout) on rank " +
                                  std::to_string(rank_)
                            : hvd_handle_message(handle);
  hvd_release(handle);
  throw Error(s, what + ": " + message);
}

void RuntimeLayer::barrier() {
  run(blank_op(HVD_COLL_BARRIER, "horovod-bench.barrier"), "barrier");
}

std::vector<double> RuntimeLayer::max_over_ranks(
    const std::vector<double>& mine) {
  std::vector<double> values = mine;
  if (values.empty()) return values;
  std::string name = "horovod-bench.max." + std::to_string(values.size());
  int64_t shape[1] = {static_cast<int64_t>(values.size())};
  hvd_tensor tensor = host_tensor(values.data(), HVD_FLOAT64, shape);
  hvd_op op = blank_op(HVD_COLL_ALLREDUCE, name.c_str());
  op.op = HVD_OP_MAX;
  op.tensor_count = 1;
  op.inputs = &tensor;
  run(op,
      "maximum over the ranks of " + std::to_string(values.size()) + " values");
  return values;
}

}  // namespace hvd_bench
