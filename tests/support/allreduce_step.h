// One training step of the multi-process jobs: allreduces enqueued one by
// one, as a loop's gradients come, then waited for, every result checked.
#pragma once

#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "mp_support.h"

namespace mp {

struct StepOrder {
  bool reversed = false;  // enqueued last tensor first
  useconds_t gap_us = 0;  // between one enqueue and the next
};

// Step `step`: an allreduce of each of `buffers`, named `names`, enqueued
// in `order`, then each waited for; element i of every buffer must come
// back as want(i).
inline void allreduce_step(int step, std::vector<Buffer>& buffers,
                           const std::vector<std::string>& names,
                           StepOrder order,
                           const std::function<double(size_t)>& want) {
  const size_t count = buffers.size();
  std::vector<hvd_handle*> handles(count, nullptr);
  for (size_t j = 0; j < count; ++j) {
    const size_t k = order.reversed ? count - 1 - j : j;
    if (j > 0 && order.gap_us > 0) usleep(order.gap_us);
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, names[k], &buffers[k].desc, 1);
    expect_ok(hvd_enqueue(&op, &handles[k]), "enqueue " + names[k]);
  }
  for (size_t k = 0; k < count; ++k) {
    if (!handles[k]) continue;
    const std::string what = names[k] + " step " + std::to_string(step);
    hvd_status s = hvd_wait(handles[k], 60000);
    expect(s == HVD_OK, what + ": " + hvd_handle_message(handles[k]));
    hvd_release(handles[k]);
    if (s == HVD_OK) {
      expect_values(buffers[k], what, want);
    }
  }
}

}  // namespace mp
