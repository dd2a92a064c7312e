// The collective ops' kernels: asynchronous (TF_NewAsyncKernelBuilder), so
// compute hands the op to the core and returns; the core's done callback
// (adapter_table.cc) or the finisher ends it. No TensorFlow thread waits.
#include <tensorflow/c/kernels.h>

#include <string>

#include "adapter_table.h"
#include "finisher.h"
#include "kernel_config.h"
#include "op_state.h"
#include "registration.h"
#include "status_codes.h"

namespace hvd::tf {
namespace {

// The core's rows for this rank of a reducescatter: rows / size each, one
// more on the first rows % size ranks.
int64_t scattered_rows(int64_t rows, int32_t rank, int32_t size) {
  return rows / size + (rank < rows % size ? 1 : 0);
}

// Gathers inputs and, where the caller provides them, outputs. False when
// the op already failed (and ended).
bool prepare(OpState* state) {
  const KernelConfig& c = state->config();
  TF_OpKernelContext* ctx = state->context();
  switch (c.collective) {
    case HVD_COLL_ALLREDUCE:
    case HVD_COLL_BROADCAST:
      for (int i = 0; i < TF_NumInputs(ctx); ++i) {
        if (!state->add_input(i)) return false;
        if (!state->add_output(i, state->input_shape(i))) return false;
      }
      return true;
    case HVD_COLL_ALLGATHER:
      for (int i = 0; i < TF_NumInputs(ctx); ++i) {
        if (!state->add_input(i)) return false;
      }
      return true;
    case HVD_COLL_REDUCESCATTER: {
      int32_t rank = -1, size = 0;
      if (hvd_process_set_rank(c.process_set, &rank, &size) != HVD_OK) {
        state->fail(TF_FAILED_PRECONDITION, hvd_last_error());
        return false;
      }
      for (int i = 0; i < TF_NumInputs(ctx); ++i) {
        if (!state->add_input(i)) return false;
        std::vector<int64_t> shape = state->input_shape(i);
        if (shape.empty()) continue;  // the core rejects it, naming the op
        if (rank >= 0) shape[0] = scattered_rows(shape[0], rank, size);
        if (!state->add_output(i, shape)) return false;
      }
      return true;
    }
    case HVD_COLL_ALLTOALL: {
      if (!state->add_input(0)) return false;
      Status status;
      TF_Tensor* splits = nullptr;
      TF_GetInput(ctx, 1, &splits, status.get());
      if (!status.ok() || !splits) {
        state->fail(TF_INTERNAL,
                    std::string("cannot read splits: ") + status.message());
        return false;
      }
      const auto* values = static_cast<const int32_t*>(TF_TensorData(splits));
      state->splits().assign(values, values + TF_TensorElementCount(splits));
      TF_DeleteTensor(splits);
      return true;
    }
    default:  // barrier, join: no tensors
      return true;
  }
}

void compute(void* kernel, TF_OpKernelContext* ctx,
             TF_AsyncOpKernelDoneCallback* done) {
  const auto& config = *static_cast<const KernelConfig*>(kernel);
  auto* state = new OpState(ctx, done, config);
  std::string error;
  hvd_adapter* adapter = tf_adapter(&error);
  if (!adapter) return state->fail(TF_INTERNAL, error);
  if (!hvd_is_initialized()) {
    return state->fail(TF_FAILED_PRECONDITION,
                       "Horovod has not been initialized; use hvd.init().");
  }
  if (!prepare(state)) return;

  hvd_op op{};
  op.struct_size = sizeof op;
  op.collective = config.collective;
  const bool named = config.collective != HVD_COLL_BARRIER &&
                     config.collective != HVD_COLL_JOIN;
  op.name = named ? config.name.c_str() : nullptr;
  op.process_set = config.process_set;
  op.tensor_count = static_cast<int32_t>(state->inputs().size());
  op.inputs = state->inputs().empty() ? nullptr : state->inputs().data();
  op.outputs = state->outputs().empty() ? nullptr : state->outputs().data();
  op.op = config.op;
  op.prescale = config.prescale;
  op.postscale = config.postscale;
  op.root = config.root;
  if (!state->splits().empty()) {
    op.splits = state->splits().data();
    op.split_count = static_cast<int32_t>(state->splits().size());
  }
  op.adapter = adapter;
  op.adapter_op = state;
  // Once enqueued, the op may end (and `state` be gone) at any moment.
  const bool keeps_handle = ends_through_handle(config.collective);
  hvd_handle* handle = nullptr;
  hvd_status status = hvd_enqueue(&op, &handle);
  if (status != HVD_OK) return state->finish(tf_code(status), hvd_last_error());
  if (keeps_handle)
    Finisher::get().handed_over(state, handle);
  else
    hvd_release(handle);
}

template <hvd_collective kCollective>
void* create(TF_OpKernelConstruction* ctx) {
  return read_config(ctx, kCollective);
}

void destroy(void* kernel) { delete static_cast<KernelConfig*>(kernel); }

template <hvd_collective kCollective>
void register_kernel(const char* op_name) {
  TF_KernelBuilder* builder = TF_NewAsyncKernelBuilder(
      op_name, "CPU", create<kCollective>, compute, destroy);
  Status status;
  TF_RegisterKernelBuilder((std::string(op_name) + "Op").c_str(), builder,
                           status.get());
  check_registered(op_name, status);
}

}  // namespace

void register_collective_kernels() {
  register_kernel<HVD_COLL_ALLREDUCE>("HorovodAllreduce");
  register_kernel<HVD_COLL_ALLREDUCE>("HorovodGroupedAllreduce");
  register_kernel<HVD_COLL_ALLGATHER>("HorovodAllgather");
  register_kernel<HVD_COLL_ALLGATHER>("HorovodGroupedAllgather");
  register_kernel<HVD_COLL_BROADCAST>("HorovodBroadcast");
  register_kernel<HVD_COLL_ALLTOALL>("HorovodAlltoall");
  register_kernel<HVD_COLL_REDUCESCATTER>("HorovodReducescatter");
  register_kernel<HVD_COLL_REDUCESCATTER>("HorovodGroupedReducescatter");
  register_kernel<HVD_COLL_JOIN>("HorovodJoin");
  register_kernel<HVD_COLL_BARRIER>("HorovodBarrier");
}

}  // namespace hvd::tf
