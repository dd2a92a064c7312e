// The public C API (horovod.h): the process's one runtime behind a mutex,
// handles, and fork awareness.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "common/error.h"
#include "device/device.h"
#include "horovod/horovod.h"
#include "runtime/handle.h"
#include "runtime/runtime.h"

namespace hvd::runtime {
namespace {

// Serialises init and shutdown; re-made in a forked child, where a thread
// of the parent may have held it.
std::mutex* g_lifecycle = new std::mutex;
// Guards g_runtime; held only for a pointer copy (and across fork()).
std::mutex g_mutex;
std::shared_ptr<Runtime>* g_runtime = nullptr;
std::once_flag g_atfork_once;

void atfork_prepare() { g_mutex.lock(); }
void atfork_parent() { g_mutex.unlock(); }
void atfork_child() {
  // The runtime's threads did not survive the fork: leave it behind
  // untouched (its destructor would join threads that do not exist).
  g_runtime = nullptr;
  g_lifecycle = new std::mutex;
  g_mutex.unlock();
}

std::shared_ptr<Runtime> current() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_runtime ? *g_runtime : nullptr;
}

std::shared_ptr<Runtime> require() {
  std::shared_ptr<Runtime> rt = current();
  if (!rt) throw Error(HVD_ERR_SHUT_DOWN, "horovod is not initialised");
  return rt;
}

void check_handle(hvd_handle* h) {
  if (!h) throw Error(HVD_ERR_INVALID_ARGUMENT, "null handle");
  if (h->pid != process_id()) {
    throw Error(HVD_ERR_SHUT_DOWN,
                "the handle belongs to the parent process; a forked child "
                "does not inherit the runtime");
  }
}

// The blocking set changes wait where a completion callback would wait
// for itself.
hvd_status refuse_in_callback(const char* call) {
  return guard([&] {
    std::shared_ptr<Runtime> rt = require();
    if (rt->on_progress_thread()) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  std::string(call) + " called from a completion callback");
    }
    return HVD_OK;
  });
}

// The blocking set changes: the handle of a started one waited for,
// read (the set's id into *id, when given) and released.
hvd_status finish_set_change(hvd_handle* handle, int32_t* id) {
  hvd_status status = hvd_wait(handle, -1);
  hvd_tensor out{};
  out.struct_size = sizeof out;
  if (status == HVD_OK && id) status = hvd_handle_output(handle, 0, &out);
  if (status == HVD_OK && id) {
    std::memcpy(id, static_cast<const uint8_t*>(out.data) + out.byte_offset,
                sizeof *id);
  }
  hvd_release(handle);
  return status;
}

template <typename Query>
int32_t query(Query q) {
  std::shared_ptr<Runtime> rt = current();
  return rt ? q(*rt) : -1;
}

}  // namespace
}  // namespace hvd::runtime

using hvd::Error;
using hvd::guard;
using namespace hvd::runtime;

extern "C" {

HVD_EXPORT hvd_status hvd_init(const hvd_init_options* opts) {
  return guard([&] {
    std::call_once(g_atfork_once, [] {
      pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    });
    std::lock_guard<std::mutex> life(*g_lifecycle);
    if (current()) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_init: horovod is already initialised (call "
                  "hvd_shutdown first)");
    }
    auto rt = std::make_shared<Runtime>(opts);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_runtime = new std::shared_ptr<Runtime>(std::move(rt));
    return HVD_OK;
  });
}

HVD_EXPORT hvd_status hvd_shutdown(void) {
  return guard([&] {
    std::lock_guard<std::mutex> life(*g_lifecycle);
    std::shared_ptr<Runtime> rt = current();
    if (!rt) return HVD_OK;
    if (rt->on_progress_thread()) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_shutdown called from a completion callback");
    }
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      delete g_runtime;
      g_runtime = nullptr;
    }
    rt->shutdown();
    return HVD_OK;
  });
}

HVD_EXPORT int32_t hvd_is_initialized(void) { return current() ? 1 : 0; }

HVD_EXPORT int32_t hvd_rank(void) {
  return query([](Runtime& r) { return r.rank(); });
}
HVD_EXPORT int32_t hvd_size(void) {
  return query([](Runtime& r) { return r.size(); });
}
HVD_EXPORT int32_t hvd_local_rank(void) {
  return query([](Runtime& r) { return r.local_rank(); });
}
HVD_EXPORT int32_t hvd_local_size(void) {
  return query([](Runtime& r) { return r.local_size(); });
}
HVD_EXPORT int32_t hvd_cross_rank(void) {
  return query([](Runtime& r) { return r.cross_rank(); });
}
HVD_EXPORT int32_t hvd_cross_size(void) {
  return query([](Runtime& r) { return r.cross_size(); });
}
HVD_EXPORT int32_t hvd_is_homogeneous(void) {
  return query([](Runtime& r) { return r.is_homogeneous() ? 1 : 0; });
}

HVD_EXPORT const char* hvd_last_error(void) { return hvd::last_error(); }

HVD_EXPORT const char* hvd_status_string(hvd_status status) {
  return hvd::status_name(status);
}

HVD_EXPORT hvd_status hvd_enqueue(const hvd_op* op, hvd_handle** out) {
  return guard([&] {
    if (!op || !out) {
      throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_enqueue: null op or out");
    }
    *out = nullptr;
    std::shared_ptr<Runtime> rt = require();
    *out = rt->enqueue(*op);
    return HVD_OK;
  });
}

HVD_EXPORT hvd_status hvd_poll(hvd_handle* handle, int32_t* done) {
  return guard([&] {
    check_handle(handle);
    if (!done) throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_poll: null done");
    std::lock_guard<std::mutex> lock(handle->mutex);
    *done = handle->done ? 1 : 0;
    return HVD_OK;
  });
}

HVD_EXPORT hvd_status hvd_wait(hvd_handle* handle, int64_t timeout_ms) {
  return guard([&] {
    check_handle(handle);
    // Small ops finish within microseconds: this thread drives them
    // itself while they move, as a sleep (or a switch to the background
    // thread) would cost more.
    const auto give_up = timeout_ms < 0
                             ? std::chrono::steady_clock::time_point::max()
                             : std::chrono::steady_clock::now() +
                                   std::chrono::milliseconds(timeout_ms);
    if (handle->spin > std::chrono::nanoseconds::zero() &&
        !handle->finished.load(std::memory_order_acquire)) {
      if (std::shared_ptr<Runtime> rt = current()) {
        if (!rt->drive_until_done(handle, handle->spin, give_up))
          handle->spin = std::chrono::nanoseconds::zero();
      }
    }
    std::unique_lock<std::mutex> lock(handle->mutex);
    auto is_done = [&] { return handle->done; };
    if (timeout_ms < 0) {
      handle->cv.wait(lock, is_done);
    } else if (!handle->cv.wait_until(lock, give_up, is_done)) {
      throw Error(HVD_ERR_TIMEOUT, "hvd_wait: still running after " +
                                       std::to_string(timeout_ms) + " ms");
    }
    if (handle->status != HVD_OK) hvd::set_last_error(handle->message);
    return handle->status;
  });
}

HVD_EXPORT const char* hvd_handle_message(hvd_handle* handle) {
  if (!handle || handle->pid != process_id()) return "";
  std::lock_guard<std::mutex> lock(handle->mutex);
  return handle->done ? handle->message.c_str() : "";
}

HVD_EXPORT hvd_status hvd_handle_output(hvd_handle* handle, int32_t index,
                                        hvd_tensor* out) {
  return guard([&] {
    check_handle(handle);
    if (!out)
      throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_handle_output: null out");
    std::lock_guard<std::mutex> lock(handle->mutex);
    if (!handle->done || handle->status != HVD_OK) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_handle_output: the op has not completed successfully");
    }
    if (index < 0 || static_cast<size_t>(index) >= handle->outputs.size()) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_handle_output: the op has " +
                      std::to_string(handle->outputs.size()) +
                      " allocated output(s), no index " +
                      std::to_string(index));
    }
    *out = describe_tensor(handle->outputs[index].view);
    return HVD_OK;
  });
}

HVD_EXPORT hvd_status hvd_handle_received_splits(hvd_handle* handle,
                                                 const int32_t** splits,
                                                 int32_t* count) {
  return guard([&] {
    check_handle(handle);
    if (!splits || !count) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_handle_received_splits: null argument");
    }
    std::lock_guard<std::mutex> lock(handle->mutex);
    if (!handle->done || handle->status != HVD_OK ||
        handle->received_splits.empty()) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_handle_received_splits: not a completed alltoall");
    }
    *splits = handle->received_splits.data();
    *count = static_cast<int32_t>(handle->received_splits.size());
    return HVD_OK;
  });
}

HVD_EXPORT void hvd_release(hvd_handle* handle) {
  if (!handle || handle->pid != process_id()) return;  // a parent's: left alone
  unref_handle(handle);
}

HVD_EXPORT hvd_status hvd_enqueue_add_process_set(const int32_t* ranks,
                                                  int32_t count,
                                                  hvd_handle** out) {
  return guard([&] {
    if ((!ranks && count > 0) || count < 0 || !out) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_add_process_set: null ranks or handle, or a negative "
                  "count");
    }
    *out = nullptr;
    *out = require()->start_add_process_set(
        std::vector<int32_t>(ranks, ranks + count));
    return HVD_OK;
  });
}

HVD_EXPORT hvd_status hvd_enqueue_remove_process_set(int32_t id,
                                                     hvd_handle** out) {
  return guard([&] {
    if (!out) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_remove_process_set: null handle");
    }
    *out = nullptr;
    *out = require()->start_remove_process_set(id);
    return HVD_OK;
  });
}

HVD_EXPORT hvd_status hvd_add_process_set(const int32_t* ranks, int32_t count,
                                          int32_t* id) {
  if (!id) {
    return guard([]() -> hvd_status {
      throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_add_process_set: null id");
    });
  }
  hvd_handle* handle = nullptr;
  hvd_status status = refuse_in_callback("hvd_add_process_set");
  if (status == HVD_OK) {
    status = hvd_enqueue_add_process_set(ranks, count, &handle);
  }
  return status == HVD_OK ? finish_set_change(handle, id) : status;
}

HVD_EXPORT hvd_status hvd_remove_process_set(int32_t id) {
  hvd_handle* handle = nullptr;
  hvd_status status = refuse_in_callback("hvd_remove_process_set");
  if (status == HVD_OK) status = hvd_enqueue_remove_process_set(id, &handle);
  return status == HVD_OK ? finish_set_change(handle, nullptr) : status;
}

HVD_EXPORT hvd_status hvd_process_set_rank(int32_t id, int32_t* rank,
                                           int32_t* size) {
  return guard([&] {
    if (!rank || !size) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_process_set_rank: null rank or size");
    }
    if (!require()->process_set_layout(id, rank, size)) {
      throw Error(HVD_ERR_NOT_FOUND, "hvd_process_set_rank: process set " +
                                         std::to_string(id) +
                                         " does not exist");
    }
    return HVD_OK;
  });
}

HVD_EXPORT hvd_status hvd_start_timeline(const char* path,
                                         int32_t mark_cycles) {
  return guard([&] {
    if (!path) {
      throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_start_timeline: null path");
    }
    require()->start_timeline(path, mark_cycles != 0);
    return HVD_OK;
  });
}

HVD_EXPORT hvd_status hvd_stop_timeline(void) {
  return guard([&] {
    require()->stop_timeline();
    return HVD_OK;
  });
}

HVD_EXPORT int32_t hvd_accepts_memory(int32_t kind, int32_t device_id) {
  if (kind != HVD_MEM_HOST && kind != HVD_MEM_CUDA) return 0;
  const hvd_device device{static_cast<hvd_mem_kind>(kind), device_id};
  return hvd::device_unusable(device).empty() ? 1 : 0;
}

HVD_EXPORT const hvd_device_api* hvd_device_layer(void) {
  return hvd::device_api();
}

}  // extern "C"
