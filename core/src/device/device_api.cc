// The hvd_device_api table: host memory (a NULL stream runs on the calling
// thread, a created stream is a fake device with a worker thread), CUDA
// through the runtime loaded on demand, its kernels (cuda_kernels.h) too.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "common/error.h"
#include "device/cuda_kernels.h"
#include "device/cuda_runtime.h"
#include "device/device.h"
#include "device/host_stream.h"
#include "horovod_plugin/enums.h"

struct hvd_stream_s {
  hvd_device device;
  std::unique_ptr<hvd::HostStream> host;    // HVD_MEM_HOST
  hvd::CudaRuntime::Stream cuda = nullptr;  // HVD_MEM_CUDA
};

struct hvd_event_s {
  hvd_device device;
  hvd::HostEvent host;                     // HVD_MEM_HOST
  hvd::CudaRuntime::Event cuda = nullptr;  // HVD_MEM_CUDA
};

namespace hvd {
namespace {

std::string describe(hvd_device device) {
  return std::string(hvd_plugin::mem_kind_name(device.kind)) + " device " +
         std::to_string(device.id);
}

[[noreturn]] void unsupported(const std::string& what) {
  throw Error(HVD_ERR_UNSUPPORTED, "device layer: " + what);
}

[[noreturn]] void invalid(const std::string& what) {
  throw Error(HVD_ERR_INVALID_ARGUMENT, "device layer: " + what);
}

std::string cuda_unusable(const CudaRuntime& cuda, hvd_device device) {
  if (device.id >= 0 && device.id < cuda.device_count()) return "";
  std::string why =
      cuda.device_count() == 0
          ? cuda.unavailable_reason()
          : std::to_string(cuda.device_count()) + " CUDA device(s) here";
  return describe(device) + " is not usable: " + why;
}

const CudaRuntime& cuda_for(hvd_device device) {
  const CudaRuntime& cuda = CudaRuntime::get();
  std::string why = cuda_unusable(cuda, device);
  if (!why.empty()) invalid(why);
  return cuda;
}

void cuda_check(const CudaRuntime& cuda, CudaRuntime::Error error,
                const char* call) {
  if (error != CudaRuntime::kSuccess) {
    throw Error(HVD_ERR_SYSTEM, std::string("device layer: ") + call +
                                    " failed: " + cuda.error_text(error));
  }
}

void check_host_device(hvd_device device) {
  if (device.kind == HVD_MEM_HOST && device.id != 0) {
    invalid("host device " + std::to_string(device.id) +
            " requested; there is only host device 0");
  }
}

// A NULL stream means "now, on this thread"; otherwise the stream must be
// of the memory kind the work is on.
HostStream* host_stream(hvd_stream stream, const char* what) {
  if (stream == nullptr) return nullptr;
  if (stream->device.kind != HVD_MEM_HOST) {
    unsupported(std::string(what) + " on host memory ordered on a " +
                describe(stream->device) + " stream");
  }
  return stream->host.get();
}

int32_t device_count(void*, hvd_mem_kind kind) {
  switch (kind) {
    case HVD_MEM_HOST:
      return 1;
    case HVD_MEM_CUDA:
      return CudaRuntime::get().device_count();
  }
  return 0;
}

hvd_status stream_create(void*, hvd_device device, hvd_stream* out) {
  return guard([&] {
    if (out == nullptr) invalid("stream_create: out is NULL");
    auto stream = std::make_unique<hvd_stream_s>();
    stream->device = device;
    if (device.kind == HVD_MEM_HOST) {
      check_host_device(device);
      stream->host = std::make_unique<HostStream>();
    } else if (device.kind == HVD_MEM_CUDA) {
      const CudaRuntime& cuda = cuda_for(device);
      CudaDeviceGuard on(cuda, device.id);
      cuda_check(cuda, on.status(), "cudaSetDevice");
      cuda_check(cuda,
                 cuda.StreamCreateWithFlags(&stream->cuda,
                                            CudaRuntime::kStreamNonBlocking),
                 "cudaStreamCreateWithFlags");
    } else {
      unsupported("streams on " + describe(device));
    }
    *out = stream.release();
    return HVD_OK;
  });
}

hvd_status stream_destroy(void*, hvd_stream stream) {
  return guard([&] {
    if (stream == nullptr) return HVD_OK;
    std::unique_ptr<hvd_stream_s> owned(stream);
    if (stream->cuda != nullptr) {
      const CudaRuntime& cuda = CudaRuntime::get();
      cuda_check(cuda, cuda.StreamDestroy(stream->cuda), "cudaStreamDestroy");
    }
    return HVD_OK;  // a host stream drains its queue as it goes
  });
}

hvd_status stream_synchronize(void*, hvd_stream stream) {
  return guard([&] {
    if (stream == nullptr) return HVD_OK;
    if (stream->host) {
      stream->host->synchronize();
    } else {
      const CudaRuntime& cuda = CudaRuntime::get();
      cuda_check(cuda, cuda.StreamSynchronize(stream->cuda),
                 "cudaStreamSynchronize");
    }
    return HVD_OK;
  });
}

hvd_status stream_wait_event(void*, hvd_stream stream, hvd_event event) {
  return guard([&] {
    if (event == nullptr) invalid("stream_wait_event: event is NULL");
    if (stream == nullptr) {  // synchronous: wait here
      if (event->device.kind == HVD_MEM_HOST) {
        event->host.wait();
      } else {
        const CudaRuntime& cuda = CudaRuntime::get();
        cuda_check(cuda, cuda.EventSynchronize(event->cuda),
                   "cudaEventSynchronize");
      }
      return HVD_OK;
    }
    if (stream->device.kind != event->device.kind) {
      unsupported("a " + describe(stream->device) +
                  " stream waiting on an event of " + describe(event->device));
    }
    if (stream->host) {
      auto [state, position] = event->host.capture();
      if (state) {  // a failure of the awaited stream spreads, as in CUDA
        stream->host->enqueue_fallible([state = std::move(state), position] {
          state->wait_for(position);
          return state->failure_at(position);
        });
      }
    } else {
      const CudaRuntime& cuda = CudaRuntime::get();
      cuda_check(cuda, cuda.StreamWaitEvent(stream->cuda, event->cuda, 0),
                 "cudaStreamWaitEvent");
    }
    return HVD_OK;
  });
}

hvd_status event_create(void*, hvd_device device, hvd_event* out) {
  return guard([&] {
    if (out == nullptr) invalid("event_create: out is NULL");
    auto event = std::make_unique<hvd_event_s>();
    event->device = device;
    if (device.kind == HVD_MEM_HOST) {
      check_host_device(device);
    } else if (device.kind == HVD_MEM_CUDA) {
      const CudaRuntime& cuda = cuda_for(device);
      CudaDeviceGuard on(cuda, device.id);
      cuda_check(cuda, on.status(), "cudaSetDevice");
      cuda_check(cuda,
                 cuda.EventCreateWithFlags(&event->cuda,
                                           CudaRuntime::kEventDisableTiming),
                 "cudaEventCreateWithFlags");
    } else {
      unsupported("events on " + describe(device));
    }
    *out = event.release();
    return HVD_OK;
  });
}

hvd_status event_destroy(void*, hvd_event event) {
  return guard([&] {
    if (event == nullptr) return HVD_OK;
    std::unique_ptr<hvd_event_s> owned(event);
    if (event->cuda != nullptr) {
      const CudaRuntime& cuda = CudaRuntime::get();
      cuda_check(cuda, cuda.EventDestroy(event->cuda), "cudaEventDestroy");
    }
    return HVD_OK;
  });
}

hvd_status event_record(void*, hvd_event event, hvd_stream stream) {
  return guard([&] {
    if (event == nullptr) invalid("event_record: event is NULL");
    if (event->device.kind == HVD_MEM_HOST) {
      event->host.record(host_stream(stream, "event_record"));
      return HVD_OK;
    }
    if (stream != nullptr && stream->device.kind != HVD_MEM_CUDA) {
      unsupported("a CUDA event recorded on a " + describe(stream->device) +
                  " stream");
    }
    const CudaRuntime& cuda = CudaRuntime::get();
    cuda_check(cuda,
               cuda.EventRecord(event->cuda,
                                stream != nullptr ? stream->cuda : nullptr),
               "cudaEventRecord");
    return HVD_OK;
  });
}

hvd_status event_query(void*, hvd_event event) {
  return guard([&] {
    if (event == nullptr) invalid("event_query: event is NULL");
    if (event->device.kind == HVD_MEM_HOST) {
      if (!event->host.complete()) return HVD_AGAIN;
      const std::string failure = event->host.failure();
      if (!failure.empty()) {
        throw Error(HVD_ERR_SYSTEM,
                    "device layer: work on the fake device "
                    "failed before the event: " +
                        failure);
      }
      return HVD_OK;
    }
    const CudaRuntime& cuda = CudaRuntime::get();
    const CudaRuntime::Error error = cuda.EventQuery(event->cuda);
    if (error == CudaRuntime::kNotReady) return HVD_AGAIN;
    cuda_check(cuda, error, "cudaEventQuery");
    return HVD_OK;
  });
}

hvd_status mem_alloc(void*, hvd_device device, size_t bytes, void** out) {
  return guard([&] {
    if (out == nullptr) invalid("mem_alloc: out is NULL");
    if (device.kind == HVD_MEM_HOST) {
      check_host_device(device);
      void* p = nullptr;
      if (posix_memalign(&p, 64, bytes > 0 ? bytes : 1) != 0) {
        throw Error(HVD_ERR_OUT_OF_MEMORY, "device layer: cannot allocate " +
                                               std::to_string(bytes) +
                                               " bytes of host memory");
      }
      *out = p;
    } else if (device.kind == HVD_MEM_CUDA) {
      const CudaRuntime& cuda = cuda_for(device);
      CudaDeviceGuard on(cuda, device.id);
      cuda_check(cuda, on.status(), "cudaSetDevice");
      cuda_check(cuda, cuda.Malloc(out, bytes), "cudaMalloc");
    } else {
      unsupported("allocation on " + describe(device));
    }
    return HVD_OK;
  });
}

hvd_status mem_free(void*, hvd_device device, void* ptr) {
  return guard([&] {
    if (ptr == nullptr) return HVD_OK;
    if (device.kind == HVD_MEM_HOST) {
      std::free(ptr);
    } else if (device.kind == HVD_MEM_CUDA) {
      const CudaRuntime& cuda = cuda_for(device);
      CudaDeviceGuard on(cuda, device.id);
      cuda_check(cuda, cuda.Free(ptr), "cudaFree");
    } else {
      unsupported("memory on " + describe(device));
    }
    return HVD_OK;
  });
}

hvd_status memcpy_async(void*, void* dst, hvd_device dst_device,
                        const void* src, hvd_device src_device, size_t bytes,
                        hvd_stream stream) {
  return guard([&] {
    if (bytes == 0) return HVD_OK;
    if (dst == nullptr || src == nullptr) invalid("memcpy_async: NULL pointer");
    const bool host_only = dst_device.kind == HVD_MEM_HOST &&
                           src_device.kind == HVD_MEM_HOST &&
                           (stream == nullptr || stream->host);
    if (host_only) {
      if (HostStream* s = host_stream(stream, "memcpy_async")) {
        s->enqueue([=] { copy_large(dst, src, bytes); });
      } else {
        copy_large(dst, src, bytes);
      }
      return HVD_OK;
    }
    const bool cuda_only =
        (dst_device.kind == HVD_MEM_HOST || dst_device.kind == HVD_MEM_CUDA) &&
        (src_device.kind == HVD_MEM_HOST || src_device.kind == HVD_MEM_CUDA) &&
        (stream == nullptr || stream->device.kind == HVD_MEM_CUDA);
    if (!cuda_only) {
      unsupported(
          "copy from " + describe(src_device) + " to " + describe(dst_device) +
          (stream != nullptr ? " on a " + describe(stream->device) + " stream"
                             : std::string()));
    }
    const hvd_device on_device = stream != nullptr ? stream->device
                                 : dst_device.kind == HVD_MEM_CUDA ? dst_device
                                                                   : src_device;
    const CudaRuntime& cuda = cuda_for(on_device);
    CudaDeviceGuard on(cuda, on_device.id);
    cuda_check(cuda, on.status(), "cudaSetDevice");
    if (stream != nullptr) {
      cuda_check(cuda,
                 cuda.MemcpyAsync(dst, src, bytes, CudaRuntime::kMemcpyDefault,
                                  stream->cuda),
                 "cudaMemcpyAsync");
    } else {
      cuda_check(cuda,
                 cuda.Memcpy(dst, src, bytes, CudaRuntime::kMemcpyDefault),
                 "cudaMemcpy");
    }
    return HVD_OK;
  });
}

// The CUDA kernels for work on `device`, with the device made current for
// the guard's lifetime.
const CudaKernels& cuda_kernels_for(hvd_device device, const char* what) {
  const CudaKernels& kernels = CudaKernels::get();
  if (!kernels.loaded()) {
    unsupported(std::string(what) +
                " on CUDA memory: " + kernels.unavailable_reason());
  }
  cuda_for(device);
  return kernels;
}

void* cuda_stream_of(hvd_stream stream, const char* what) {
  if (stream == nullptr) return nullptr;  // the legacy default stream
  if (stream->device.kind != HVD_MEM_CUDA) {
    unsupported(std::string(what) + " on CUDA memory ordered on a " +
                describe(stream->device) + " stream");
  }
  return stream->cuda;
}

void launch_check(CudaRuntime::Error error, const char* what) {
  cuda_check(CudaRuntime::get(), error, what);
}

void check_kernel_device(hvd_device device, const char* what) {
  if (device.kind != HVD_MEM_HOST) {
    unsupported(std::string(what) + " on " + describe(device));
  }
  check_host_device(device);
}

hvd_status reduce(void*, hvd_device device, hvd_dtype dtype, hvd_reduce_op op,
                  void* dst, const void* a, const void* b, size_t count,
                  hvd_stream stream) {
  return guard([&] {
    if (device.kind == HVD_MEM_CUDA) {
      reduce_host(dtype, op, dst, a, b, 0);  // validates dtype and op
      const CudaKernels& k = cuda_kernels_for(device, "reduce");
      if (count == 0) return HVD_OK;
      if (dst == nullptr || a == nullptr || b == nullptr) {
        invalid("reduce: NULL pointer");
      }
      CudaDeviceGuard on(CudaRuntime::get(), device.id);
      launch_check(on.status(), "cudaSetDevice");
      launch_check(k.reduce(dtype, op, dst, a, b, count,
                            cuda_stream_of(stream, "reduce")),
                   "reduction kernel launch");
      return HVD_OK;
    }
    check_kernel_device(device, "reduce");
    if (count == 0) {
      reduce_host(dtype, op, dst, a, b, 0);  // validates dtype and op
      return HVD_OK;
    }
    if (dst == nullptr || a == nullptr || b == nullptr) {
      invalid("reduce: NULL pointer");
    }
    if (HostStream* s = host_stream(stream, "reduce")) {
      reduce_host(dtype, op, dst, a, b, 0);  // fail now, not on the worker
      s->enqueue([=] { reduce_host(dtype, op, dst, a, b, count); });
    } else {
      reduce_host(dtype, op, dst, a, b, count);
    }
    return HVD_OK;
  });
}

hvd_status scale(void*, hvd_device device, hvd_dtype dtype, void* buf,
                 size_t count, double factor, hvd_stream stream) {
  return guard([&] {
    if (device.kind == HVD_MEM_CUDA) {
      scale_host(dtype, buf, 0, factor);  // validates dtype
      const CudaKernels& k = cuda_kernels_for(device, "scale");
      if (count == 0 || factor == 1.0) return HVD_OK;
      if (buf == nullptr) invalid("scale: NULL pointer");
      CudaDeviceGuard on(CudaRuntime::get(), device.id);
      launch_check(on.status(), "cudaSetDevice");
      launch_check(
          k.scale(dtype, buf, count, factor, cuda_stream_of(stream, "scale")),
          "scale kernel launch");
      return HVD_OK;
    }
    check_kernel_device(device, "scale");
    scale_host(dtype, buf, 0, factor);  // validates dtype
    if (count == 0) return HVD_OK;
    if (buf == nullptr) invalid("scale: NULL pointer");
    if (HostStream* s = host_stream(stream, "scale")) {
      s->enqueue([=] { scale_host(dtype, buf, count, factor); });
    } else {
      scale_host(dtype, buf, count, factor);
    }
    return HVD_OK;
  });
}

}  // namespace

hvd_status launch_host_func(hvd_stream stream, void (*fn)(void*), void* arg) {
  return guard([&] {
    if (fn == nullptr) invalid("launch_host_func: fn is NULL");
    if (stream == nullptr) {
      fn(arg);
    } else if (stream->host) {
      stream->host->enqueue([=] { fn(arg); });
    } else {
      const CudaRuntime& cuda = CudaRuntime::get();
      cuda_check(cuda, cuda.LaunchHostFunc(stream->cuda, fn, arg),
                 "cudaLaunchHostFunc");
    }
    return HVD_OK;
  });
}

namespace {

// HOROVOD_FAKE_DEVICE_FAIL_COPY, read once (0: no failure).
uint64_t failing_copy() {
  static const uint64_t n = [] {
    const char* text = std::getenv("HOROVOD_FAKE_DEVICE_FAIL_COPY");
    return text != nullptr ? std::strtoull(text, nullptr, 10) : 0ull;
  }();
  return n;
}

// Runs the copies in order; "" or why the injected failure stopped them.
std::string host_copies(const std::vector<CopyEntry>& copies) {
  static std::atomic<uint64_t> copies_run{0};
  const uint64_t fail = failing_copy();
  for (const CopyEntry& c : copies) {
    if (fail != 0 && ++copies_run == fail) {
      return "copy " + std::to_string(fail) + " of " + std::to_string(c.bytes) +
             " bytes failed (HOROVOD_FAKE_DEVICE_FAIL_COPY)";
    }
    if (c.bytes == 0 || c.dst == c.src) continue;
    if (c.src != nullptr) {
      copy_large(c.dst, c.src, c.bytes);
    } else {
      std::memset(c.dst, 0, c.bytes);
    }
  }
  return "";
}

}  // namespace

hvd_status batched_copy(hvd_device device, const std::vector<CopyEntry>& copies,
                        hvd_stream stream) {
  return guard([&] {
    if (device.kind == HVD_MEM_CUDA) {
      const CudaKernels& k = cuda_kernels_for(device, "batched copy");
      if (copies.empty()) return HVD_OK;
      CudaDeviceGuard on(CudaRuntime::get(), device.id);
      launch_check(on.status(), "cudaSetDevice");
      launch_check(k.batched_copy(copies.data(), copies.size(),
                                  cuda_stream_of(stream, "batched copy")),
                   "batched copy kernel launch");
      return HVD_OK;
    }
    check_kernel_device(device, "batched copy");
    if (HostStream* s = host_stream(stream, "batched copy")) {
      s->enqueue_fallible([copies] { return host_copies(copies); });
      return HVD_OK;
    }
    const std::string failure = host_copies(copies);
    if (!failure.empty())
      throw Error(HVD_ERR_SYSTEM, "device layer: " + failure);
    return HVD_OK;
  });
}

hvd_device stream_device(hvd_stream stream) {
  return stream != nullptr ? stream->device : hvd_device{HVD_MEM_HOST, 0};
}

std::string fusion_kernels_unavailable(hvd_device device) {
  if (device.kind != HVD_MEM_CUDA) return device_unusable(device);
  const CudaKernels& kernels = CudaKernels::get();
  return kernels.loaded() ? "" : kernels.unavailable_reason();
}

std::string device_unusable(hvd_device device) {
  switch (device.kind) {
    case HVD_MEM_HOST:
      return device.id == 0 ? "" : describe(device) + " does not exist";
    case HVD_MEM_CUDA:
      return cuda_unusable(CudaRuntime::get(), device);
  }
  return describe(device) + " is not supported";
}

hvd_status synchronize_copies(hvd_device device, hvd_stream stream) {
  if (stream != nullptr) return stream_synchronize(nullptr, stream);
  if (device.kind != HVD_MEM_CUDA) return HVD_OK;
  return guard([&] {
    const CudaRuntime& cuda = cuda_for(device);
    CudaDeviceGuard on(cuda, device.id);
    cuda_check(cuda, on.status(), "cudaSetDevice");
    cuda_check(cuda, cuda.StreamSynchronize(nullptr), "cudaStreamSynchronize");
    return HVD_OK;
  });
}

namespace {

void* stream_native(void*, hvd_stream stream) {
  if (stream == nullptr || stream->device.kind != HVD_MEM_CUDA) return nullptr;
  return stream->cuda;
}

}  // namespace

const hvd_device_api* device_api() {
  static const hvd_device_api table = [] {
    hvd_device_api t{};
    t.struct_size = sizeof(hvd_device_api);
    t.ext = nullptr;
    t.ctx = nullptr;
    t.device_count = device_count;
    t.stream_create = stream_create;
    t.stream_destroy = stream_destroy;
    t.stream_synchronize = stream_synchronize;
    t.stream_wait_event = stream_wait_event;
    t.event_create = event_create;
    t.event_destroy = event_destroy;
    t.event_record = event_record;
    t.event_query = event_query;
    t.mem_alloc = mem_alloc;
    t.mem_free = mem_free;
    t.memcpy_async = memcpy_async;
    t.reduce = reduce;
    t.scale = scale;
    t.stream_native = stream_native;
    return t;
  }();
  return &table;
}

}  // namespace hvd
