#include "adapter_table.h"

#include <mutex>

#include "finisher.h"
#include "op_state.h"
#include "status_codes.h"

namespace hvd::tf {
namespace {

hvd_status allocate_output(void*, void* op_ctx, int32_t index,
                           const hvd_tensor*, int32_t ndim,
                           const int64_t* shape, hvd_tensor* out) {
  auto* state = static_cast<OpState*>(op_ctx);
  return state->allocate_output(index,
                                std::vector<int64_t>(shape, shape + ndim), out);
}

void done(void*, void* op_ctx, hvd_status status, const char* message) {
  auto* state = static_cast<OpState*>(op_ctx);
  if (ends_through_handle(state->config().collective)) {
    state->status = status;
    state->message = message ? message : "";
    Finisher::get().ended(state);
    return;
  }
  state->finish(tf_code(status), status == HVD_OK ? "" : message);
}

const hvd_adapter_api kTable = {sizeof(hvd_adapter_api),
                                nullptr,
                                HVD_PLUGIN_ADAPTER,
                                HVD_ABI_VERSION_MAJOR,
                                HVD_ABI_VERSION_MINOR,
                                "tensorflow",
                                HVD_TF_BUILT_AGAINST,
                                allocate_output,
                                nullptr,
                                done,
                                // done() may run on a thread in hvd_wait:
                                // it only hands the op to TensorFlow.
                                HVD_THREADING_SERIALIZED};

}  // namespace

hvd_adapter* tf_adapter(std::string* error) {
  static std::once_flag once;
  static hvd_adapter* adapter = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    if (hvd_register_adapter(&kTable, nullptr, &adapter) != HVD_OK) {
      adapter = nullptr;
      failure = hvd_last_error();
    }
  });
  if (!adapter) *error = failure;
  return adapter;
}

}  // namespace hvd::tf
