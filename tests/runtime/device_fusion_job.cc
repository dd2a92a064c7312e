// The device fusion path on the fake device, as one job: run with
//   horovodrun -np N runtime_device_fusion_job [--fail] CONFIG.toml
// Tensors are fake-device memory (host memory; the host transports move
// it), written by a producer stream that runs late and made ready by an
// event, and handed to hvd_enqueue with the framework's stream. With
// HOROVOD_FAKE_DEVICE_DELAY_US set, every work item on a fake stream runs
// late, so an ordering bug shows as a wrong value:
//  - inputs hold a poison value until the producer's copy lands: a
//    collective that read before the ready event would reduce it;
//  - every done callback checks its outputs: one that came before the done
//    event would see the poison the outputs start with;
//  - grouped ops of many tensors (empty, odd and prime lengths) of every
//    dtype and op with prescale and postscale fuse into one buffer: copies
//    at a wrong offset give wrong values.
// --fail (with HOROVOD_FAKE_DEVICE_FAIL_COPY=N): a copy fails mid-batch,
// and every op of the batch must fail with the same status and message.
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "mp_support.h"

using namespace mp;

namespace {

int R = 0, N = 1;
const hvd_device kFake{HVD_MEM_HOST, 0};
constexpr double kPoison = 77;

const hvd_dtype kAllDtypes[] = {
    HVD_UINT8,   HVD_INT8,     HVD_UINT16,  HVD_INT16,   HVD_INT32, HVD_INT64,
    HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT32, HVD_FLOAT64, HVD_BOOL};
const hvd_reduce_op kOps[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN,
                              HVD_OP_MAX, HVD_OP_PRODUCT};
// Empty, one, odd, prime lengths.
const int64_t kLengths[] = {0, 1, 2, 3, 7, 13, 0, 31, 127, 1021, 4099};

const hvd_device_api& dev() { return *hvd_device_layer(); }

void ok(hvd_status s, const std::string& what) {
  if (s != HVD_OK) {
    std::printf("rank %d: FAIL: %s: %s\n", R, what.c_str(), hvd_last_error());
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
};

// One op of tensors on the fake device: inputs that start as poison and
// get their values through the producer stream, outputs that start as
// poison, and the values every output must hold.
struct Op {
  std::string name;
  std::vector<Buffer> staged, in, out;
  std::vector<hvd_tensor> in_desc, out_desc;
  std::vector<std::vector<double>> want;
  hvd_dtype dtype = HVD_FLOAT32;
  hvd_event ready = nullptr;
  hvd_handle* handle = nullptr;
  std::atomic<int> done_calls{0};
  std::atomic<int> early{0};  // outputs seen wrong in the done callback
  hvd_status done_status = HVD_OK;
  std::string done_message;

  ~Op() {
    if (ready) dev().event_destroy(dev().ctx, ready);
  }

  // Inputs of `values` (one vector per tensor), written on the producer.
  void make_inputs(Framework& fw, hvd_dtype d,
                   const std::vector<std::vector<double>>& values) {
    dtype = d;
    for (const auto& v : values) {
      staged.emplace_back(d, std::vector<int64_t>{int64_t(v.size())});
      in.emplace_back(d, std::vector<int64_t>{int64_t(v.size())});
      for (size_t i = 0; i < v.size(); ++i) {
        staged.back().set(i, v[i]);
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
  void make_outputs(const std::vector<size_t>& lengths) {
    for (size_t n : lengths) {
      out.emplace_back(dtype, std::vector<int64_t>{int64_t(n)});
      for (size_t i = 0; i < n; ++i) out.back().set(i, kPoison);
    }
    for (Buffer& b : out) out_desc.push_back(b.desc);
  }

  size_t wrong() const {
    size_t bad = 0;
    for (size_t t = 0; t < want.size(); ++t) {
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

  hvd_op describe(hvd_collective c, Framework& fw) {
    hvd_op op = make_op(c, name, in_desc.data(), int32_t(in_desc.size()),
                        out_desc.empty() ? nullptr : out_desc.data());
    op.stream = fw.stream;
    op.ready_event = ready;
    op.done = on_done;
    op.user = this;
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

// Rank r's value of element i: small integers, so every result is exact.
double value(hvd_dtype d, hvd_reduce_op op, int r, size_t t, size_t i) {
  if (d == HVD_BOOL) return ((i + r + t) % 3) == 0 ? 1 : 0;
  if (op == HVD_OP_PRODUCT) return 1 + ((i + r + t) % 2);
  double v = static_cast<double>((i * 7 + r * 3 + t * 5) % 30 + 1);
  return is_signed(d) ? v - 15 : v;
}

// Scale factors exact in every dtype and range (bool is never scaled).
double prescale_of(hvd_dtype d) {
  return d == HVD_BOOL ? 1.0 : is_float(d) ? 0.5 : 2.0;
}
double postscale_of(hvd_dtype d) { return dtype_size(d) == 1 ? 1.0 : 3.0; }

// The host path's arithmetic: scale (integers truncated), reduce, scale.
double scaled(hvd_dtype d, double v, double f) {
  return is_float(d) ? v * f : std::trunc(v * f);
}

double expected(hvd_dtype d, hvd_reduce_op op, size_t t, size_t i) {
  const double pre = prescale_of(d);
  double acc = scaled(d, value(d, op, 0, t, i), pre);
  for (int r = 1; r < N; ++r) {
    const double v = scaled(d, value(d, op, r, t, i), pre);
    if (d == HVD_BOOL) {
      acc = (op == HVD_OP_SUM || op == HVD_OP_MAX) ? (acc || v) : (acc && v);
    } else if (op == HVD_OP_MIN) {
      acc = std::min(acc, v);
    } else if (op == HVD_OP_MAX) {
      acc = std::max(acc, v);
    } else if (op == HVD_OP_PRODUCT) {
      acc *= v;
    } else {
      acc += v;
    }
  }
  if (d == HVD_BOOL) return acc;
  const double post =
      postscale_of(d) / (op == HVD_OP_AVERAGE ? double(N) : 1.0);
  return scaled(d, acc, post);
}

// Grouped allreduces of every dtype and op, each of kLengths tensors, all
// enqueued at once so they fuse.
void fused_allreduce(Framework& fw) {
  std::vector<std::unique_ptr<Op>> ops;
  for (hvd_dtype d : kAllDtypes) {
    for (hvd_reduce_op rop : kOps) {
      if (d == HVD_BOOL && rop == HVD_OP_AVERAGE) continue;
      auto op = std::make_unique<Op>();
      op->name = std::string("fused.") + dtype_name(d) + "." +
                 std::to_string(int(rop));
      std::vector<std::vector<double>> values;
      std::vector<size_t> lengths;
      for (size_t t = 0; t < std::size(kLengths); ++t) {
        const size_t n = size_t(kLengths[t]);
        lengths.push_back(n);
        values.emplace_back(n);
        op->want.emplace_back(n);
        for (size_t i = 0; i < n; ++i) {
          values[t][i] = value(d, rop, R, t, i);
          op->want[t][i] = expected(d, rop, t, i);
        }
      }
      op->make_inputs(fw, d, values);
      op->make_outputs(lengths);
      hvd_op desc = op->describe(HVD_COLL_ALLREDUCE, fw);
      desc.op = rop;
      desc.prescale = prescale_of(d);
      desc.postscale = postscale_of(d);
      op->enqueue(desc);
      ops.push_back(std::move(op));
    }
  }
  for (auto& op : ops) op->wait_and_check();
  ok(dev().stream_synchronize(dev().ctx, fw.producer), "stream_synchronize");
}

// The other collectives on fake-device memory through the same path.
void other_collectives(Framework& fw) {
  const hvd_dtype d = HVD_INT32;
  std::vector<std::unique_ptr<Op>> ops;
  for (size_t t = 0; t < 4; ++t) {  // broadcasts from the last rank
    auto op = std::make_unique<Op>();
    op->name = "fake.broadcast." + std::to_string(t);
    const size_t n = size_t(kLengths[t + 7]);
    std::vector<double> values(n);
    op->want.emplace_back(n);
    for (size_t i = 0; i < n; ++i) {
      values[i] = double(R * 1000 + t * 10 + i % 7);
      op->want[0][i] = double((N - 1) * 1000 + t * 10 + i % 7);
    }
    op->make_inputs(fw, d, {values});
    op->make_outputs({n});
    hvd_op desc = op->describe(HVD_COLL_BROADCAST, fw);
    desc.root = N - 1;
    op->enqueue(desc);
    ops.push_back(std::move(op));
  }
  {  // grouped reducescatter with scaling: rows split over the ranks
    auto op = std::make_unique<Op>();
    op->name = "fake.reducescatter";
    std::vector<std::vector<double>> values;
    std::vector<size_t> lengths;
    for (size_t t = 0; t < 3; ++t) {
      const int64_t rows = int64_t(kLengths[t + 4]) + N;  // 7+N, 13+N, N
      values.emplace_back(size_t(rows));
      for (int64_t i = 0; i < rows; ++i) {
        values[t][size_t(i)] = double((i + R + int64_t(t)) % 9);
      }
      // This rank's rows: rows / N each, one more on the first rows % N.
      int64_t first = 0;
      for (int r = 0; r < R; ++r) first += rows / N + (r < rows % N ? 1 : 0);
      const int64_t mine = rows / N + (R < rows % N ? 1 : 0);
      lengths.push_back(size_t(mine));
      op->want.emplace_back(size_t(mine));
      for (int64_t i = 0; i < mine; ++i) {
        double sum = 0;
        for (int r = 0; r < N; ++r)
          sum += 2 * double((first + i + r + int64_t(t)) % 9);
        op->want[t][size_t(i)] = 3 * sum;
      }
    }
    op->make_inputs(fw, d, values);
    op->make_outputs(lengths);
    hvd_op desc = op->describe(HVD_COLL_REDUCESCATTER, fw);
    desc.op = HVD_OP_SUM;
    desc.prescale = 2;
    desc.postscale = 3;
    op->enqueue(desc);
    ops.push_back(std::move(op));
  }
  for (auto& op : ops) op->wait_and_check();

  // allgather: rank r gives r + 1 rows; the core allocates the output.
  Op gather;
  gather.name = "fake.allgather";
  gather.make_inputs(fw, d, {std::vector<double>(size_t(R + 1), double(R))});
  gather.enqueue(gather.describe(HVD_COLL_ALLGATHER, fw));
  if (gather.handle && hvd_wait(gather.handle, 120000) == HVD_OK) {
    hvd_tensor out{};
    out.struct_size = sizeof out;
    expect_ok(hvd_handle_output(gather.handle, 0, &out), "allgather output");
    size_t at = 0;
    for (int r = 0; r < N; ++r) {
      for (int k = 0; k <= r; ++k, ++at) {
        expect(load(d, out.data, at) == r,
               "allgather row " + std::to_string(at));
      }
    }
  } else {
    expect(false,
           "allgather: " + std::string(gather.handle
                                           ? hvd_handle_message(gather.handle)
                                           : hvd_last_error()));
  }
  if (gather.handle) hvd_release(gather.handle);
  gather.handle = nullptr;
  ok(dev().stream_synchronize(dev().ctx, fw.producer), "stream_synchronize");
}

// Every op of a batch fails as one when a copy fails in the middle of it.
void failure_mid_batch(Framework& fw) {
  // A long copy first holds the producer back until every op is
  // enqueued: they become ready together, and fuse.
  const size_t hold = 64 << 20;
  std::vector<uint8_t> hold_src(hold, 1), hold_dst(hold);
  ok(dev().memcpy_async(dev().ctx, hold_dst.data(), kFake, hold_src.data(),
                        kFake, hold, fw.producer),
     "memcpy_async");
  std::vector<std::unique_ptr<Op>> ops;
  hvd_op group[6];
  for (size_t t = 0; t < 6; ++t) {
    auto op = std::make_unique<Op>();
    op->name = "failing." + std::to_string(t);
    op->make_inputs(fw, HVD_FLOAT32, {std::vector<double>(100 + t, 1.0)});
    group[t] = op->describe(HVD_COLL_ALLREDUCE, fw);
    ops.push_back(std::move(op));
  }
  hvd_event all_ready = nullptr;
  ok(dev().event_create(dev().ctx, kFake, &all_ready), "event_create");
  ok(dev().event_record(dev().ctx, all_ready, fw.producer), "event_record");
  for (size_t t = 0; t < 6; ++t) {
    group[t].ready_event = all_ready;
    ops[t]->enqueue(group[t]);
  }
  for (auto& op : ops) {
    if (!op->handle) continue;
    hvd_status s = hvd_wait(op->handle, 60000);
    expect(s != HVD_OK && s != HVD_ERR_TIMEOUT,
           op->name + ": finished with " + hvd_status_string(s) +
               " although a copy of its batch failed");
    expect(op->done_calls == 1 && op->done_status == s,
           op->name + ": done callback disagrees with the handle");
    const std::string text = hvd_handle_message(op->handle);
    expect(text.find("HOROVOD_FAKE_DEVICE_FAIL_COPY") != std::string::npos ||
               text.find("rank") != std::string::npos,
           op->name +
               ": message names neither the failed copy nor a "
               "failed rank: " +
               text);
    if (op == ops.front()) {
      std::printf("rank %d: the batch failed: %s\n", R, text.c_str());
    }
    hvd_release(op->handle);
    op->handle = nullptr;
  }
  ok(dev().stream_synchronize(dev().ctx, fw.producer), "stream_synchronize");
  dev().event_destroy(dev().ctx, all_ready);
}

}  // namespace

int main(int argc, char** argv) {
  const bool fail = argc > 1 && std::string(argv[1]) == "--fail";
  if (argc != (fail ? 3 : 2)) {
    std::fprintf(stderr, "usage: %s [--fail] CONFIG.toml\n", argv[0]);
    return 2;
  }
  if (!init_job(argv[fail ? 2 : 1])) return 1;
  R = hvd_rank();
  N = hvd_size();
  {
    Framework fw;
    if (fail) {
      failure_mid_batch(fw);
    } else {
      fused_allreduce(fw);
      other_collectives(fw);
      hvd_op bar = make_op(HVD_COLL_BARRIER, "", nullptr, 0);
      bar.name = nullptr;
      run_op(bar);
    }
  }
  hvd_shutdown();
  std::printf("rank %d: device fusion%s: %s\n", R, fail ? " (failure)" : "",
              g_failures ? "FAILED" : "passed");
  std::fflush(stdout);
  return g_failures ? 1 : 0;
}
