// The device fusion path on the fake device, as one job: run with
//   horovodrun -np N runtime_device_fusion_job [--fail COLLECTIVE] CONFIG
// Tensors are fake-device memory (host memory; the host transports move
// it), written by a producer stream that runs late and made ready by an
// event, and handed to hvd_enqueue with the framework's stream
// (fake_device_op.h). With HOROVOD_FAKE_DEVICE_DELAY_US set, every work
// item on a fake stream runs late, so an ordering bug shows as a wrong
// value. Grouped allreduces of many tensors (empty, odd and prime lengths)
// of every dtype and op with prescale and postscale, and a grouped
// reducescatter, fuse into one buffer: copies at a wrong offset give wrong
// values.
// --fail allreduce|broadcast|allgather, with HOROVOD_FAKE_DEVICE_FAIL_COPY=N:
// a copy fails in the middle of a batch of ops of that collective, and
// every op of the batch must fail with the same status and message in its
// done callback and its handle. (Alltoall has no batch: it never fuses,
// and on the fake device runs on the caller's tensors, without copies.)
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fake_device_op.h"
#include "run_job.h"

using namespace mp;

namespace {

const hvd_dtype kAllDtypes[] = {
    HVD_UINT8,   HVD_INT8,     HVD_UINT16,  HVD_INT16,   HVD_INT32, HVD_INT64,
    HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT32, HVD_FLOAT64, HVD_BOOL};
const hvd_reduce_op kOps[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN,
                              HVD_OP_MAX, HVD_OP_PRODUCT};
// Empty, one, odd, prime lengths.
const int64_t kLengths[] = {0, 1, 2, 3, 7, 13, 0, 31, 127, 1021, 4099};

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
      std::vector<std::vector<int64_t>> shapes;
      for (size_t t = 0; t < std::size(kLengths); ++t) {
        const size_t n = size_t(kLengths[t]);
        shapes.push_back({int64_t(n)});
        values.emplace_back(n);
        op->want.emplace_back(n);
        for (size_t i = 0; i < n; ++i) {
          values[t][i] = value(d, rop, R, t, i);
          op->want[t][i] = expected(d, rop, t, i);
        }
      }
      op->make_inputs(fw, d, values);
      op->make_outputs(shapes);
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

// A grouped reducescatter with scaling: rows split over the ranks.
void fused_reducescatter(Framework& fw) {
  const hvd_dtype d = HVD_INT32;
  Op op;
  op.name = "fake.reducescatter";
  std::vector<std::vector<double>> values;
  std::vector<std::vector<int64_t>> shapes;
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
    shapes.push_back({mine});
    op.want.emplace_back(size_t(mine));
    for (int64_t i = 0; i < mine; ++i) {
      double sum = 0;
      for (int r = 0; r < N; ++r)
        sum += 2 * double((first + i + r + int64_t(t)) % 9);
      op.want[t][size_t(i)] = 3 * sum;
    }
  }
  op.make_inputs(fw, d, values);
  op.make_outputs(shapes);
  hvd_op desc = op.describe(HVD_COLL_REDUCESCATTER, fw);
  desc.op = HVD_OP_SUM;
  desc.prescale = 2;
  desc.postscale = 3;
  op.enqueue(desc);
  op.wait_and_check();
  ok(dev().stream_synchronize(dev().ctx, fw.producer), "stream_synchronize");
}

// Six ops of `c`, found ready together so that they fuse into one batch;
// a copy fails in the middle of it (HOROVOD_FAKE_DEVICE_FAIL_COPY), and
// every op must fail, its done callback and its handle agreeing.
void failure_mid_batch(Framework& fw, hvd_collective c) {
  std::atomic<bool> gate{false};
  std::vector<std::unique_ptr<Op>> ops;
  for (size_t t = 0; t < 6; ++t) {
    auto op = std::make_unique<Op>();
    op->name = std::string("failing.") + hvd_plugin::collective_name(c) + "." +
               std::to_string(t);
    const size_t n = 100 + t;
    op->make_inputs(fw, HVD_FLOAT32, {std::vector<double>(n, 1.0)});
    if (c == HVD_COLL_BROADCAST) op->make_outputs({{int64_t(n)}});
    op->gate = &gate;
    op->after = ops.empty() ? nullptr : ops.back().get();
    op->enqueue(op->describe(c, fw));
    ops.push_back(std::move(op));
  }
  ok(dev().stream_synchronize(dev().ctx, fw.producer), "stream_synchronize");
  gate = true;
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
}

hvd_collective failing_collective(const char* name) {
  for (hvd_collective c :
       {HVD_COLL_ALLREDUCE, HVD_COLL_BROADCAST, HVD_COLL_ALLGATHER}) {
    if (std::strcmp(name, hvd_plugin::collective_name(c)) == 0) return c;
  }
  std::fprintf(stderr,
               "--fail takes allreduce, broadcast or allgather, not '%s'\n",
               name);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  const bool fail = argc > 1 && std::string(argv[1]) == "--fail";
  if (argc != (fail ? 4 : 2)) {
    return usage(argv[0], "[--fail COLLECTIVE] CONFIG.toml");
  }
  if (!fail) {
    return run_once("device fusion", argv[1], [] {
      Framework fw;
      fused_allreduce(fw);
      fused_reducescatter(fw);
    });
  }
  const hvd_collective failing = failing_collective(argv[2]);
  JobOptions options;
  options.barrier = false;  // the failed batch may have failed the runtime
  return run_once(
      "device fusion (failure)", argv[3],
      [failing] {
        Framework fw;
        failure_mid_batch(fw, failing);
      },
      options);
}
