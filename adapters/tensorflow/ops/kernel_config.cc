#include "kernel_config.h"

#include <memory>

#include "status_codes.h"

namespace hvd::tf {
namespace {

// Horovod's numbering of reduction ops (horovod.common.basics).
bool core_op(int32_t horovod_op, hvd_reduce_op* out) {
  switch (horovod_op) {
    case 0:
      *out = HVD_OP_AVERAGE;
      return true;
    case 1:
      *out = HVD_OP_SUM;
      return true;
    case 2:
      *out = HVD_OP_ADASUM;
      return true;
    case 3:
      *out = HVD_OP_MIN;
      return true;
    case 4:
      *out = HVD_OP_MAX;
      return true;
    case 5:
      *out = HVD_OP_PRODUCT;
      return true;
    default:
      return false;
  }
}

bool has_attr(TF_OpKernelConstruction* ctx, const char* attr) {
  Status status;
  return TF_OpKernelConstruction_HasAttr(ctx, attr, status.get()) &&
         status.ok();
}

}  // namespace

KernelConfig* read_config(TF_OpKernelConstruction* ctx,
                          hvd_collective collective) {
  auto config = std::make_unique<KernelConfig>();
  config->collective = collective;
  TF_StringView node = TF_OpKernelConstruction_GetName(ctx);
  config->name.assign(node.data, node.len);
  Status status;
  auto fail = [&](const std::string& why) -> KernelConfig* {
    status.set(TF_INVALID_ARGUMENT, config->name + ": " + why);
    TF_OpKernelConstruction_Failure(ctx, status.get());
    return nullptr;
  };
  auto check = [&](const char* attr) {
    if (status.ok()) return true;
    fail(std::string("attribute ") + attr + ": " + status.message());
    return false;
  };

  if (has_attr(ctx, "ignore_name_scope")) {
    TF_Bool ignore = 0;
    TF_OpKernelConstruction_GetAttrBool(ctx, "ignore_name_scope", &ignore,
                                        status.get());
    if (!check("ignore_name_scope")) return nullptr;
    size_t slash = config->name.find_last_of('/');
    if (ignore && slash != std::string::npos) config->name.erase(0, slash + 1);
  }
  if (has_attr(ctx, "process_set_id")) {
    TF_OpKernelConstruction_GetAttrInt32(ctx, "process_set_id",
                                         &config->process_set, status.get());
    if (!check("process_set_id")) return nullptr;
  }
  if (has_attr(ctx, "reduce_op")) {
    int32_t op = 0;
    TF_OpKernelConstruction_GetAttrInt32(ctx, "reduce_op", &op, status.get());
    if (!check("reduce_op")) return nullptr;
    if (!core_op(op, &config->op))
      return fail("unknown reduce_op " + std::to_string(op));
  }
  for (auto [attr, field] :
       {std::pair{"prescale_factor", &config->prescale},
        std::pair{"postscale_factor", &config->postscale}}) {
    if (!has_attr(ctx, attr)) continue;
    float value = 1.0f;
    TF_OpKernelConstruction_GetAttrFloat(ctx, attr, &value, status.get());
    if (!check(attr)) return nullptr;
    *field = value;
  }
  if (has_attr(ctx, "root_rank")) {
    TF_OpKernelConstruction_GetAttrInt32(ctx, "root_rank", &config->root,
                                         status.get());
    if (!check("root_rank")) return nullptr;
  }
  return config.release();
}

}  // namespace hvd::tf
