// Broadcast, allgather and alltoall of fake-device tensors through the
// device fusion path, as one job: run with
//   horovodrun -np N runtime_device_collectives_job CONFIG
// Inputs are written late by a producer stream and made ready by an event;
// outputs are the caller's (broadcast) or allocated through a test adapter
// (allgather, alltoall), and start as poison (fake_device_op.h); then an
// allgather whose output the core allocates. With
// HOROVOD_FAKE_DEVICE_DELAY_US set, a collective that read an input before
// its ready event, or a done callback that came before the device wrote
// the outputs, shows as a wrong value. Rows differ between ranks (some
// none), tensors have rows of several elements, and several ops fuse into
// one buffer, so a copy at a wrong offset gives wrong values too.
#include <memory>
#include <string>
#include <vector>

#include "fake_device_op.h"
#include "run_job.h"

using namespace mp;

namespace {

constexpr int64_t kWidth = 3;  // elements a row

// Element c of row j of tensor t on rank r: distinct across all of them.
double cell(int r, size_t t, int64_t j, int64_t c) {
  return double(r * 1000 + int64_t(t) * 100 + j * kWidth + c);
}

// The rows of tensor t that rank r contributes: 0, 1 or 2.
int64_t gathered_rows(int r, size_t t) { return (r + int64_t(t)) % 3; }

// Rows rank `from` sends rank `to` in alltoall t: 0 to 2.
int32_t split(int from, int to, size_t t) {
  return int32_t((from * 2 + to + int64_t(t)) % 3);
}

// Rows [first, first + rows) of tensor t on rank r, flattened.
std::vector<double> rows_of(int r, size_t t, int64_t first, int64_t rows) {
  std::vector<double> v;
  for (int64_t j = first; j < first + rows; ++j) {
    for (int64_t c = 0; c < kWidth; ++c) v.push_back(cell(r, t, j, c));
  }
  return v;
}

void append(std::vector<double>& to, const std::vector<double>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

// Broadcasts from the last rank, of different lengths, that fuse.
void broadcasts(Framework& fw, std::vector<std::unique_ptr<Op>>& ops,
                int step) {
  for (size_t t = 0; t < 4; ++t) {
    auto op = std::make_unique<Op>();
    op->name =
        "fake.broadcast." + std::to_string(step) + "." + std::to_string(t);
    const int64_t rows = int64_t(t) * 5 + 1;
    op->make_inputs(fw, HVD_INT32, {rows_of(R, t, 0, rows)}, {{rows, kWidth}});
    op->want.push_back(rows_of(N - 1, t, 0, rows));
    op->make_outputs({{rows, kWidth}});
    hvd_op desc = op->describe(HVD_COLL_BROADCAST, fw);
    desc.root = N - 1;
    op->enqueue(desc);
    ops.push_back(std::move(op));
  }
}

// A grouped allgather of three tensors and a lone one, whose rows differ
// between ranks; outputs through the adapter.
void allgathers(Framework& fw, std::vector<std::unique_ptr<Op>>& ops,
                int step) {
  for (size_t group = 0; group < 2; ++group) {
    auto op = std::make_unique<Op>();
    op->name =
        "fake.allgather." + std::to_string(step) + "." + std::to_string(group);
    std::vector<std::vector<double>> values;
    std::vector<std::vector<int64_t>> shapes;
    for (size_t t = group * 3; t < (group == 0 ? 3 : 4); ++t) {
      const int64_t rows = gathered_rows(R, t);
      values.push_back(rows_of(R, t, 0, rows));
      shapes.push_back({rows, kWidth});
      std::vector<double> want;
      for (int r = 0; r < N; ++r) {
        append(want, rows_of(r, t, 0, gathered_rows(r, t)));
      }
      op->want.push_back(want);
    }
    op->make_inputs(fw, HVD_FLOAT32, values, shapes);
    op->enqueue(op->describe(HVD_COLL_ALLGATHER, fw));
    ops.push_back(std::move(op));
  }
}

// Alltoalls with uneven splits (some none); outputs through the adapter.
void alltoalls(Framework& fw, std::vector<std::unique_ptr<Op>>& ops,
               std::vector<std::vector<int32_t>>& splits, int step) {
  for (size_t t = 0; t < 2; ++t) {
    auto op = std::make_unique<Op>();
    op->name =
        "fake.alltoall." + std::to_string(step) + "." + std::to_string(t);
    splits.emplace_back();
    int64_t rows = 0;
    for (int p = 0; p < N; ++p) {
      splits.back().push_back(split(R, p, t));
      rows += split(R, p, t);
    }
    op->make_inputs(fw, HVD_INT64, {rows_of(R, t, 0, rows)}, {{rows, kWidth}});
    // From each rank p, in rank order, the rows p sends here.
    std::vector<double> want;
    for (int p = 0; p < N; ++p) {
      int64_t first = 0;
      for (int q = 0; q < R; ++q) first += split(p, q, t);
      append(want, rows_of(p, t, first, split(p, R, t)));
    }
    op->want.push_back(want);
    hvd_op desc = op->describe(HVD_COLL_ALLTOALL, fw);
    desc.splits = splits.back().data();
    desc.split_count = N;
    op->enqueue(desc);
    ops.push_back(std::move(op));
  }
}

// The rows each rank sent here, as the handle reports them.
void check_received_splits(Op& op, size_t t) {
  const int32_t* got = nullptr;
  int32_t count = 0;
  expect_ok(hvd_handle_received_splits(op.handle, &got, &count),
            op.name + ": received splits");
  if (got == nullptr) return;
  expect(count == N, op.name + ": " + std::to_string(count) +
                         " received splits for " + std::to_string(N) +
                         " ranks");
  for (int p = 0; p < N && p < count; ++p) {
    expect(got[p] == split(p, R, t),
           op.name + ": received " + std::to_string(got[p]) +
               " rows from rank " + std::to_string(p));
  }
}

// An allgather without an adapter: the core allocates the output (host
// memory) and the caller reads it from the handle.
void core_allocated_allgather(Framework& fw) {
  const hvd_dtype d = HVD_INT32;
  Op gather;
  gather.name = "fake.allgather.core";
  gather.make_inputs(fw, d, {std::vector<double>(size_t(R + 1), double(R))});
  hvd_op desc = gather.describe(HVD_COLL_ALLGATHER, fw);
  desc.adapter = nullptr;
  desc.adapter_op = nullptr;
  gather.enqueue(desc);
  if (!gather.handle) return;
  if (hvd_wait(gather.handle, 120000) == HVD_OK) {
    hvd_tensor out{};
    out.struct_size = sizeof out;
    expect_ok(hvd_handle_output(gather.handle, 0, &out), "allgather output");
    size_t at = 0;
    for (int r = 0; r < N && out.data; ++r) {
      for (int k = 0; k <= r; ++k, ++at) {
        expect(load(d, out.data, at) == r,
               "allgather row " + std::to_string(at));
      }
    }
  } else {
    expect(false,
           "allgather: " + std::string(hvd_handle_message(gather.handle)));
  }
  hvd_release(gather.handle);
  gather.handle = nullptr;
  ok(dev().stream_synchronize(dev().ctx, fw.producer), "stream_synchronize");
}

void step(Framework& fw, int s) {
  std::vector<std::unique_ptr<Op>> ops;
  std::vector<std::vector<int32_t>> splits;
  broadcasts(fw, ops, s);
  allgathers(fw, ops, s);
  const size_t first_alltoall = ops.size();
  alltoalls(fw, ops, splits, s);
  for (size_t k = 0; k < ops.size(); ++k) {
    Op& op = *ops[k];
    if (k >= first_alltoall && op.handle &&
        hvd_wait(op.handle, 120000) == HVD_OK) {
      check_received_splits(op, k - first_alltoall);
    }
    op.wait_and_check();
  }
  ok(dev().stream_synchronize(dev().ctx, fw.producer), "stream_synchronize");
}

}  // namespace

int main(int argc, char** argv) {
  return run_job(argc, argv, "device collectives", [] {
    Framework fw;
    for (int s = 0; s < 3; ++s) step(fw, s);
    core_allocated_allgather(fw);
  });
}
