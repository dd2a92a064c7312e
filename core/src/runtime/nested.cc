#include "runtime/nested.h"

#include "common/error.h"
#include "device/device.h"
#include "p2p/engine.h"
#include "runtime/messages.h"

namespace hvd::runtime {

uint64_t collective_bytes(const hvd_coll_args& args, int32_t team_size) {
  const uint64_t esize = dtype_size(args.dtype);
  uint64_t elements = args.count;
  if ((args.collective == HVD_COLL_ALLGATHER ||
       args.collective == HVD_COLL_ALLTOALL) &&
      args.counts) {
    elements = 0;
    for (int32_t r = 0; r < team_size; ++r) elements += args.counts[r];
  }
  return elements * esize;
}

hvd_status NestedRunner::post(hvd_p2p_s* context, const std::string& reducer,
                              const hvd_coll_args& args, p2p::NestedTask* out,
                              std::string* error) {
  const hvd_team* team = context->team->view();
  if (reducer.empty()) {
    reducers_.candidates(args.collective, args.op, args.dtype, team,
                         args.device.kind, collective_bytes(args, team->size),
                         "", candidates_);
  } else {
    int index = reducers_.index_of(reducer);
    if (index < 0) {
      *error = "reducer '" + reducer +
               "' is not loaded (reducer.load: " + reducers_.names() + ")";
      return HVD_ERR_UNSUPPORTED;
    }
    candidates_.assign(1, static_cast<size_t>(index));
  }
  std::string unsupported;
  for (size_t index : candidates_) {
    const Reducer& r = reducers_.at(index);
    hvd_task* task = nullptr;
    hvd_status s =
        r.api().post(r.instance(), &args, p2p::Engine::api(), context, &task);
    if (s == HVD_OK) {
      out->api = &r.api();
      out->task = task;
      return HVD_OK;
    }
    if (s != HVD_ERR_UNSUPPORTED) {
      *error = r.error(std::string(collective_name(args.collective)) +
                       " post failed");
      return s;
    }
    unsupported += (unsupported.empty() ? "" : "; ") + r.error("unsupported");
  }
  *error = std::string("no reducer runs ") + collective_name(args.collective) +
           (unsupported.empty() ? "" : ": " + unsupported);
  return HVD_ERR_UNSUPPORTED;
}

}  // namespace hvd::runtime
