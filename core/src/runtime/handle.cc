#include "runtime/handle.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/error.h"

namespace hvd::runtime {
namespace {

std::atomic<pid_t> g_pid{0};  // 0: not looked up in this process yet

void forget_pid() { g_pid.store(0, std::memory_order_relaxed); }

}  // namespace

pid_t process_id() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, forget_pid); });
  pid_t pid = g_pid.load(std::memory_order_relaxed);
  if (pid == 0) {
    pid = getpid();
    g_pid.store(pid, std::memory_order_relaxed);
  }
  return pid;
}

Output int32_output(int32_t value, const char* what) {
  Output out;
  out.memory = {static_cast<uint8_t*>(malloc(sizeof(int32_t))), free};
  if (!out.memory) throw Error(HVD_ERR_OUT_OF_MEMORY, what);
  std::memcpy(out.memory.get(), &value, sizeof value);
  out.view.data = out.memory.get();
  out.view.dtype = HVD_INT32;
  out.view.shape = {1};
  out.view.elements = 1;
  out.view.bytes = sizeof(int32_t);
  return out;
}

hvd_handle_s* make_handle() {
  auto* h = new hvd_handle_s;
  h->pid = process_id();
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
  h->finished.store(true, std::memory_order_release);
  h->cv.notify_all();
}

void unref_handle(hvd_handle_s* h) {
  if (h->refs.fetch_sub(1) == 1) delete h;
}

}  // namespace hvd::runtime
