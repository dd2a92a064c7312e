// The device fusion path: the executor's data path for tensors that come
// with a device stream, written once against the device layer, so the fake
// device (host memory, a worker thread per stream) runs the same code as
// CUDA above the kernels.
//
// For each response it queues on the op's stream (or one of its own per
// device): a wait for every op's ready event, the copy-in of every tensor
// into the persistent fusion buffer of (process set, device, slot) in one
// batched launch, the prescale; then records the slot's event. Once that
// event is reached (polled, never waited for) the collective is posted on
// the buffer, on the same stream. When it is done: the postscale, the
// copy-out in one launch, the done event; the ops complete only once the
// done event is reached, so no framework sees an output before it. A
// failure of any of it (a launch, or work on the stream) is thrown as
// hvd::Error, which fails every op of the batch (and the runtime).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "device/device.h"
#include "horovod/abi.h"
#include "horovod/transport.h"

namespace hvd::p2p {
class Engine;
}

namespace hvd::runtime {

// One slot's response on the device path.
struct DeviceRun {
  bool active = false;
  hvd_device device{HVD_MEM_HOST, 0};
  hvd_stream stream = nullptr;
  std::vector<hvd_event> ready;  // the ops' ready events (the ops' own)
  // Applied here, not by the reducer: prescale on `send` before the
  // collective, postscale on `recv` after it (counts in elements).
  hvd_dtype dtype = HVD_FLOAT32;
  double prescale = 1.0, postscale = 1.0;
  void* send = nullptr;
  uint64_t send_count = 0;
  void* recv = nullptr;
  uint64_t recv_count = 0;
  bool issued = false;  // the current stage's work is on the stream
};

class DeviceFusion {
 public:
  explicit DeviceFusion(p2p::Engine& engine) : engine_(engine) {}
  // Waits for its streams, then frees its buffers, events and streams.
  ~DeviceFusion();
  DeviceFusion(const DeviceFusion&) = delete;
  DeviceFusion& operator=(const DeviceFusion&) = delete;

  // "" when `device` can run this path here; else why not (for the log).
  static std::string unavailable(hvd_device device);

  // The persistent fusion buffer of `slot` for process set `set` on
  // `device`, at least `bytes`: device memory from the gpu transport's
  // mem_alloc where it offers one, else from the device layer. It grows
  // (the slot's previous work is complete by then) and is kept until
  // shutdown.
  uint8_t* buffer(int32_t set, hvd_device device, size_t slot, uint64_t bytes);
  // The stream for work on `device` when the ops came with none (one per
  // device, created on first use).
  hvd_stream stream_for(hvd_device device);

  // Queue the stages on run.stream; `reached` then polls the slot's event.
  void issue_copy_in(DeviceRun& run, size_t slot,
                     const std::vector<CopyEntry>& copies,
                     const std::string& what);
  void issue_copy_out(DeviceRun& run, size_t slot,
                      const std::vector<CopyEntry>& copies,
                      const std::string& what);
  // Whether the work last issued for `slot` is complete; throws hvd::Error
  // naming `what` when it failed.
  bool reached(const DeviceRun& run, size_t slot, const std::string& what);
  // Waits until the stream has done all that was queued for `run`: its ops
  // may fail only once nothing on the device still reads or writes their
  // tensors, which their owners then free. Errors are the failure's own.
  void settle(const DeviceRun& run);

 private:
  struct Buffer {
    uint8_t* data = nullptr;
    uint64_t capacity = 0;
    hvd_mr* mr = nullptr;  // from the gpu transport's mem_alloc
  };
  using DeviceKey = std::tuple<int32_t, int32_t>;  // kind, id
  void release(hvd_device device, Buffer& buffer);
  void record(DeviceRun& run, size_t slot, const std::string& what);
  void scale(const DeviceRun& run, void* buf, uint64_t count, double factor,
             const std::string& what);

  p2p::Engine& engine_;
  std::map<std::tuple<int32_t, int32_t, int32_t, size_t>, Buffer> buffers_;
  std::map<DeviceKey, hvd_stream> streams_;
  std::map<std::tuple<int32_t, int32_t, size_t>, hvd_event> events_;
};

}  // namespace hvd::runtime
