// Ends the ops whose results are read from the core's handle (an
// alltoall's received splits, the rank a join returns): the handle reports
// them only once the core's done callback has returned, so these ops end
// on this one thread of the op library, never on TensorFlow's or the
// core's. It sleeps while no such op has ended.
#pragma once

#include <condition_variable>
#include <mutex>
#include <vector>

#include "horovod/horovod.h"

namespace hvd::tf {

class OpState;

// Whether ops of `collective` end through the finisher.
bool ends_through_handle(hvd_collective collective);

class Finisher {
 public:
  static Finisher& get();  // started on first use, never stopped

  // The kernel, once hvd_enqueue gave it the op's handle.
  void handed_over(OpState* state, hvd_handle* handle);
  // The core's done callback (state->status and message set).
  void ended(OpState* state);

 private:
  Finisher();
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<OpState*> ended_;
};

}  // namespace hvd::tf
