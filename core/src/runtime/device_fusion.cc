#include "runtime/device_fusion.h"

#include "common/error.h"
#include "common/log.h"
#include "horovod_plugin/enums.h"
#include "p2p/engine.h"
#include "p2p/transport.h"

namespace hvd::runtime {
namespace {

std::string device_text(hvd_device d) {
  return std::string(hvd_plugin::mem_kind_name(d.kind)) + " device " +
         std::to_string(d.id);
}

void check(hvd_status s, const std::string& what) {
  if (s != HVD_OK) {
    const char* detail = last_error();
    throw Error(s, what + (detail && *detail ? std::string(": ") + detail
                                             : std::string(" failed")));
  }
}

}  // namespace

DeviceFusion::~DeviceFusion() {
  const hvd_device_api* dev = device_api();
  for (auto& [key, stream] : streams_)
    dev->stream_synchronize(dev->ctx, stream);
  for (auto& [key, buffer] : buffers_) {
    release({std::get<1>(key), std::get<2>(key)}, buffer);
  }
  for (auto& [key, event] : events_) dev->event_destroy(dev->ctx, event);
  for (auto& [key, stream] : streams_) dev->stream_destroy(dev->ctx, stream);
}

std::string DeviceFusion::unavailable(hvd_device device) {
  return fusion_kernels_unavailable(device);
}

void DeviceFusion::release(hvd_device device, Buffer& buffer) {
  if (buffer.data == nullptr) return;
  if (buffer.mr != nullptr) {
    const p2p::Transport* gpu = engine_.gpu_transport();
    gpu->api().mem_free(gpu->instance(), buffer.data, buffer.mr);
  } else {
    if (device.kind == HVD_MEM_HOST) {
      engine_.forget_registration(buffer.data, buffer.capacity);
    }
    const hvd_device_api* dev = device_api();
    dev->mem_free(dev->ctx, device, buffer.data);
  }
  buffer = Buffer{};
}

uint8_t* DeviceFusion::buffer(int32_t set, hvd_device device, size_t slot,
                              uint64_t bytes) {
  Buffer& b = buffers_[{set, device.kind, device.id, slot}];
  if (b.data != nullptr && bytes <= b.capacity) return b.data;
  constexpr uint64_t kGrain = 1 << 20;
  const uint64_t want =
      (std::max<uint64_t>(bytes, 1) + kGrain - 1) / kGrain * kGrain;
  release(device, b);
  void* p = nullptr;
  const p2p::Transport* gpu = engine_.gpu_transport();
  if (device.kind != HVD_MEM_HOST && gpu != nullptr &&
      gpu->api().mem_alloc != nullptr &&
      gpu->api().mem_alloc(gpu->instance(), want, device, &p, &b.mr) ==
          HVD_OK) {
    b.data = static_cast<uint8_t*>(p);
    b.capacity = want;
    return b.data;
  }
  b.mr = nullptr;
  const hvd_device_api* dev = device_api();
  check(dev->mem_alloc(dev->ctx, device, want, &p),
        "fusion buffer of " + std::to_string(want) + " bytes on " +
            device_text(device));
  b.data = static_cast<uint8_t*>(p);
  b.capacity = want;
  if (device.kind == HVD_MEM_HOST) engine_.register_permanent(p, want);
  return b.data;
}

hvd_stream DeviceFusion::stream_for(hvd_device device) {
  hvd_stream& s = streams_[{device.kind, device.id}];
  if (s == nullptr) {
    const hvd_device_api* dev = device_api();
    check(dev->stream_create(dev->ctx, device, &s),
          "creating a stream on " + device_text(device));
  }
  return s;
}

void DeviceFusion::scale(const DeviceRun& run, void* buf, uint64_t count,
                         double factor, const std::string& what) {
  if (factor == 1.0 || count == 0) return;
  const hvd_device_api* dev = device_api();
  check(dev->scale(dev->ctx, run.device, run.dtype, buf, count, factor,
                   run.stream),
        what + ": scaling on " + device_text(run.device));
}

void DeviceFusion::record(DeviceRun& run, size_t slot,
                          const std::string& what) {
  const hvd_device_api* dev = device_api();
  hvd_event& event = events_[{run.device.kind, run.device.id, slot}];
  if (event == nullptr) {
    check(dev->event_create(dev->ctx, run.device, &event),
          what + ": creating an event on " + device_text(run.device));
  }
  check(dev->event_record(dev->ctx, event, run.stream),
        what + ": recording an event");
  run.issued = true;
}

void DeviceFusion::issue_copy_in(DeviceRun& run, size_t slot,
                                 const std::vector<CopyEntry>& copies,
                                 const std::string& what) {
  const hvd_device_api* dev = device_api();
  for (hvd_event ready : run.ready) {
    check(dev->stream_wait_event(dev->ctx, run.stream, ready),
          what + ": ordering after a ready event");
  }
  check(batched_copy(run.device, copies, run.stream),
        what + ": batched copy-in of " + std::to_string(copies.size()) +
            " tensor(s)");
  scale(run, run.send, run.send_count, run.prescale, what);
  record(run, slot, what);
}

void DeviceFusion::issue_copy_out(DeviceRun& run, size_t slot,
                                  const std::vector<CopyEntry>& copies,
                                  const std::string& what) {
  scale(run, run.recv, run.recv_count, run.postscale, what);
  check(batched_copy(run.device, copies, run.stream),
        what + ": batched copy-out of " + std::to_string(copies.size()) +
            " tensor(s)");
  record(run, slot, what);
}

bool DeviceFusion::reached(const DeviceRun& run, size_t slot,
                           const std::string& what) {
  const hvd_device_api* dev = device_api();
  hvd_event event = events_.at({run.device.kind, run.device.id, slot});
  hvd_status s = dev->event_query(dev->ctx, event);
  if (s == HVD_AGAIN) return false;
  check(s, what + ": device work on " + device_text(run.device));
  return true;
}

void DeviceFusion::settle(const DeviceRun& run) {
  if (run.stream == nullptr) return;
  const hvd_device_api* dev = device_api();
  dev->stream_synchronize(dev->ctx, run.stream);
}

}  // namespace hvd::runtime
