#include "runtime/handle.h"

#include <unistd.h>

namespace hvd::runtime {

hvd_handle_s* make_handle() {
  auto* h = new hvd_handle_s;
  h->pid = getpid();
  return h;
}

void finish_handle(hvd_handle_s* h, hvd_status status,
                   const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(h->mutex);
    h->status = status;
    h->message = message;
    h->done = true;
  }
  h->cv.notify_all();
}

void unref_handle(hvd_handle_s* h) {
  if (h->refs.fetch_sub(1) == 1) delete h;
}

}  // namespace hvd::runtime
