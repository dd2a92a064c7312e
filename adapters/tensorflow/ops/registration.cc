#include "registration.h"

#include <cstdio>

namespace hvd::tf {

void check_registered(const char* what, const Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "horovod.tensorflow: registering %s failed: %s\n",
                 what, status.message());
  }
}

namespace {

[[maybe_unused]] const bool registered = [] {
  register_op_definitions();
  register_collective_kernels();
  register_query_kernels();
  return true;
}();

}  // namespace
}  // namespace hvd::tf
