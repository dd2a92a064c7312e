// Kernels of the layout queries (HorovodSize, ...): an int32 scalar read
// from the core when the op runs, so a graph built before init is right.
#include <tensorflow/c/kernels.h>

#include <string>

#include "horovod/horovod.h"
#include "registration.h"
#include "status_codes.h"

namespace hvd::tf {
namespace {

enum class Query { kSize, kLocalSize, kRank, kLocalRank, kIncluded };

struct QueryKernel {
  Query query;
  int32_t process_set = 0;
};

// The value, or -1 with *error set.
int32_t evaluate(const QueryKernel& k, std::string* error) {
  if (!hvd_is_initialized()) {
    *error = "Horovod has not been initialized; use hvd.init().";
    return -1;
  }
  switch (k.query) {
    case Query::kLocalSize:
      return hvd_local_size();
    case Query::kRank:
      return hvd_rank();
    case Query::kLocalRank:
      return hvd_local_rank();
    default:
      break;
  }
  int32_t rank = -1, size = 0;
  if (hvd_process_set_rank(k.process_set, &rank, &size) != HVD_OK) {
    *error = hvd_last_error();
    return -1;
  }
  return k.query == Query::kSize ? size : (rank >= 0 ? 1 : 0);
}

template <Query kQuery>
void* create(TF_OpKernelConstruction* ctx) {
  auto* k = new QueryKernel{kQuery};
  Status status;
  if (TF_OpKernelConstruction_HasAttr(ctx, "process_set_id", status.get())) {
    TF_OpKernelConstruction_GetAttrInt32(ctx, "process_set_id", &k->process_set,
                                         status.get());
    if (!status.ok()) TF_OpKernelConstruction_Failure(ctx, status.get());
  }
  return k;
}

void compute(void* kernel, TF_OpKernelContext* ctx) {
  std::string error;
  int32_t value = evaluate(*static_cast<QueryKernel*>(kernel), &error);
  Status status;
  if (!error.empty()) {
    status.set(TF_FAILED_PRECONDITION, error);
    TF_OpKernelContext_Failure(ctx, status.get());
    return;
  }
  TF_Tensor* out = TF_AllocateOutput(ctx, 0, TF_INT32, nullptr, 0, sizeof value,
                                     status.get());
  if (!status.ok()) {
    TF_OpKernelContext_Failure(ctx, status.get());
    return;
  }
  *static_cast<int32_t*>(TF_TensorData(out)) = value;
  TF_DeleteTensor(out);
}

void destroy(void* kernel) { delete static_cast<QueryKernel*>(kernel); }

template <Query kQuery>
void register_kernel(const char* op_name) {
  TF_KernelBuilder* builder =
      TF_NewKernelBuilder(op_name, "CPU", create<kQuery>, compute, destroy);
  Status status;
  TF_RegisterKernelBuilder((std::string(op_name) + "Op").c_str(), builder,
                           status.get());
  check_registered(op_name, status);
}

}  // namespace

void register_query_kernels() {
  register_kernel<Query::kSize>("HorovodSize");
  register_kernel<Query::kLocalSize>("HorovodLocalSize");
  register_kernel<Query::kRank>("HorovodRank");
  register_kernel<Query::kLocalRank>("HorovodLocalRank");
  register_kernel<Query::kIncluded>("HorovodProcessSetIncluded");
}

}  // namespace hvd::tf
