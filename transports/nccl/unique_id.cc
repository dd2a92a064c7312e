#include "unique_id.h"

#include "horovod_plugin/boundary.h"

namespace hvd_nccl {

using hvd_plugin::fail;

UniqueIdExchange::UniqueIdExchange(const hvd_host* host, int32_t team_rank,
                                   int32_t world_rank0, std::string key,
                                   Generate generate)
    : host_(host),
      team_rank_(team_rank),
      world_rank0_(world_rank0),
      key_(std::move(key)),
      generate_(std::move(generate)) {}

std::string UniqueIdExchange::key_for(int32_t process_set, uint64_t epoch,
                                      uint32_t n) {
  return "nccl." + std::to_string(process_set) + "." + std::to_string(epoch) +
         "." + std::to_string(n);
}

hvd_status UniqueIdExchange::step() {
  if (!id_.empty()) return HVD_OK;
  if (team_rank_ == 0) {
    std::vector<char> id = generate_();
    if (id.size() != kUniqueIdBytes) {
      fail(HVD_ERR_INTERNAL,
           "nccl: a unique id of " + std::to_string(id.size()) + " bytes");
    }
    hvd_status s =
        host_->bootstrap_put(host_->ctx, key_.c_str(), id.data(), id.size());
    if (s != HVD_OK) {
      fail(s, "nccl: publishing the unique id under '" + key_ + "' failed");
    }
    id_ = std::move(id);
    return HVD_OK;
  }
  std::vector<char> id(kUniqueIdBytes);
  size_t len = id.size();
  hvd_status s = host_->bootstrap_get(host_->ctx, world_rank0_, key_.c_str(),
                                      id.data(), &len, 0);
  if (s == HVD_ERR_NOT_FOUND || s == HVD_ERR_TIMEOUT || s == HVD_AGAIN) {
    return HVD_AGAIN;
  }
  if (s != HVD_OK || len != kUniqueIdBytes) {
    fail(s != HVD_OK ? s : HVD_ERR_MISMATCH,
         "nccl: reading the unique id '" + key_ + "' of rank " +
             std::to_string(world_rank0_) + " failed (" + std::to_string(len) +
             " bytes)");
  }
  id_ = std::move(id);
  return HVD_OK;
}

}  // namespace hvd_nccl
