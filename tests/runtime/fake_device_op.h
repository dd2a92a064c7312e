// Ops on the fake device for the device fusion jobs, as a framework hands
// them to the core: inputs written late by a producer stream and made
// ready by an event, the framework's stream, and a done callback that
// checks the outputs. Inputs and outputs start as poison, so a collective
// that read an input before its ready event, or a done callback that came
// before the device wrote the outputs, shows as a wrong value. Outputs are
// the caller's (allreduce, broadcast, reducescatter) or allocated through
// a test adapter (allgather, alltoall), as horovod.torch allocates them.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "horovod/adapter.h"
#include "mp_support.h"

namespace mp {

constexpr hvd_device kFake{HVD_MEM_HOST, 0};
constexpr double kPoison = 77;

inline const hvd_device_api& dev() { return *hvd_device_layer(); }

// For the device layer's calls: a failure ends the job.
inline void ok(hvd_status s, const std::string& what) {
  if (s != HVD_OK) {
    std::printf("rank %d: FAIL: %s: %s\n", hvd_rank(), what.c_str(),
                hvd_last_error());
    std::exit(1);
  }
}

// The framework's side: the stream its ops run on, and a producer stream
// that writes the inputs (late) and records their ready event.
struct Framework {
  hvd_stream stream = nullptr, producer = nullptr;
  Framework() {
    ok(dev().stream_create(dev().ctx, kFake, &stream), "stream_create");
    ok(dev().stream_create(dev().ctx, kFake, &producer), "stream_create");
  }
  ~Framework() {
    dev().stream_synchronize(dev().ctx, producer);
    dev().stream_synchronize(dev().ctx, stream);
    dev().stream_destroy(dev().ctx, producer);
    dev().stream_destroy(dev().ctx, stream);
  }
  Framework(const Framework&) = delete;
  Framework& operator=(const Framework&) = delete;
};

// One op of tensors on the fake device, and the values every output must
// hold (`want`, one vector per output tensor).
struct Op {
  std::string name;
  std::vector<Buffer> staged, in;
  std::deque<Buffer> out;  // stays put as the adapter adds outputs
  std::vector<hvd_tensor> in_desc, out_desc;
  std::vector<std::vector<double>> want;
  hvd_dtype dtype = HVD_FLOAT32;
  hvd_event ready = nullptr;
  hvd_handle* handle = nullptr;
  std::atomic<int> done_calls{0};
  std::atomic<int> early{0};  // outputs seen wrong in the done callback
  hvd_status done_status = HVD_OK;
  std::string done_message;
  // With a gate, the op is ready only once the gate is open and the op
  // enqueued before it (`after`) was found ready: the runtime, which asks
  // in enqueue order, then finds a whole batch ready in one pass, never a
  // part of it.
  const std::atomic<bool>* gate = nullptr;
  const Op* after = nullptr;
  std::atomic<bool> found_ready{false};

  Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  ~Op() {
    if (ready) dev().event_destroy(dev().ctx, ready);
  }

  // Inputs of `shapes` holding `values` (one vector per tensor, row-major),
  // written on the producer after the stream's earlier work; ready once
  // written.
  void make_inputs(Framework& fw, hvd_dtype d,
                   const std::vector<std::vector<double>>& values,
                   std::vector<std::vector<int64_t>> shapes = {}) {
    dtype = d;
    for (size_t t = 0; t < values.size(); ++t) {
      if (shapes.size() <= t) shapes.push_back({int64_t(values[t].size())});
      staged.emplace_back(d, shapes[t]);
      in.emplace_back(d, shapes[t]);
      for (size_t i = 0; i < values[t].size(); ++i) {
        staged.back().set(i, values[t][i]);
        in.back().set(i, kPoison);
      }
    }
    for (size_t t = 0; t < in.size(); ++t) {
      ok(dev().memcpy_async(dev().ctx, in[t].data.data(), kFake,
                            staged[t].data.data(), kFake,
                            in[t].elements * dtype_size(d), fw.producer),
         "memcpy_async");
    }
    ok(dev().event_create(dev().ctx, kFake, &ready), "event_create");
    ok(dev().event_record(dev().ctx, ready, fw.producer), "event_record");
    for (Buffer& b : in) in_desc.push_back(b.desc);
  }
  // The caller's outputs, of `shapes`.
  void make_outputs(const std::vector<std::vector<int64_t>>& shapes) {
    for (const std::vector<int64_t>& shape : shapes) add_output(shape);
    for (Buffer& b : out) out_desc.push_back(b.desc);
  }
  Buffer& add_output(const std::vector<int64_t>& shape) {
    out.emplace_back(dtype, shape);
    for (size_t i = 0; i < out.back().elements; ++i) out.back().set(i, kPoison);
    return out.back();
  }

  // Outputs missing or holding a value other than `want`.
  size_t wrong() const {
    size_t bad = 0;
    for (size_t t = 0; t < want.size(); ++t) {
      if (t >= out.size() || out[t].elements != want[t].size()) {
        bad += want[t].size() + 1;
        continue;
      }
      for (size_t i = 0; i < want[t].size(); ++i) {
        if (!close(out[t].get(i), want[t][i])) ++bad;
      }
    }
    return bad;
  }
  bool close(double got, double w) const {
    if (!is_float(dtype)) return got == w;
    const double tol =
        dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16 ? 1e-2 : 1e-6;
    return std::fabs(got - w) <= tol * std::max(1.0, std::fabs(w));
  }

  static void on_done(void* user, hvd_status status, const char* message) {
    Op* op = static_cast<Op*>(user);
    op->done_status = status;
    op->done_message = message;
    if (status == HVD_OK && op->wrong() > 0) ++op->early;
    ++op->done_calls;
  }

  // The test adapter, which allocates allgather and alltoall outputs as a
  // framework does (poison until the core writes them), and holds gated
  // ops back.
  static hvd_adapter* adapter() {
    static hvd_adapter* registered = [] {
      static hvd_adapter_api api{};
      api.struct_size = sizeof api;
      api.kind = HVD_PLUGIN_ADAPTER;
      api.abi_major = HVD_ABI_VERSION_MAJOR;
      api.abi_minor = HVD_ABI_VERSION_MINOR;
      api.name = "fake-device-test";
      api.version = "1";
      api.allocate_output = [](void*, void* op_ctx, int32_t index,
                               const hvd_tensor*, int32_t ndim,
                               const int64_t* shape,
                               hvd_tensor* result) -> hvd_status {
        Op* op = static_cast<Op*>(op_ctx);
        if (size_t(index) != op->out.size()) return HVD_ERR_INVALID_ARGUMENT;
        *result =
            op->add_output(std::vector<int64_t>(shape, shape + ndim)).desc;
        return HVD_OK;
      };
      api.ready = [](void*, void* op_ctx) -> hvd_status {
        Op* op = static_cast<Op*>(op_ctx);
        if (op->gate == nullptr) return HVD_OK;
        if (!op->gate->load() || (op->after && !op->after->found_ready)) {
          return HVD_AGAIN;
        }
        op->found_ready = true;
        return HVD_OK;
      };
      api.done = [](void*, void*, hvd_status, const char*) {};
      hvd_adapter* a = nullptr;
      ok(hvd_register_adapter(&api, nullptr, &a), "hvd_register_adapter");
      return a;
    }();
    return registered;
  }

  // The op on the framework's stream, ordered after the inputs' ready
  // event; through the test adapter when the op is gated or `c` allocates
  // its outputs.
  hvd_op describe(hvd_collective c, Framework& fw) {
    hvd_op op = make_op(c, name, in_desc.data(), int32_t(in_desc.size()),
                        out_desc.empty() ? nullptr : out_desc.data());
    op.stream = fw.stream;
    op.ready_event = ready;
    op.done = on_done;
    op.user = this;
    if (gate != nullptr || c == HVD_COLL_ALLGATHER || c == HVD_COLL_ALLTOALL) {
      op.adapter = adapter();
      op.adapter_op = this;
    }
    return op;
  }

  void enqueue(const hvd_op& op) {
    hvd_status s = hvd_enqueue(&op, &handle);
    expect(s == HVD_OK, "enqueue " + name + ": " + hvd_last_error());
  }

  void wait_and_check() {
    if (!handle) return;
    hvd_status s = hvd_wait(handle, 120000);
    expect(s == HVD_OK, name + ": " + hvd_status_string(s) + ": " +
                            hvd_handle_message(handle));
    expect(done_calls == 1, name + ": done called " +
                                std::to_string(done_calls.load()) + " times");
    expect(early == 0, name +
                           ": the done callback saw outputs before the "
                           "device finished writing them");
    const size_t bad = s == HVD_OK ? wrong() : 0;
    expect(bad == 0, name + ": " + std::to_string(bad) + " wrong value(s)");
    hvd_release(handle);
    handle = nullptr;
  }
};

}  // namespace mp
