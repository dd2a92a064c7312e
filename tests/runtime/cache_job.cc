// The response cache through the C API, as one job (horovodrun -np N,
// N >= 2): for each configuration file given (cache capacities), steps of
// the same named tensors (hits, and with a small capacity evictions every
// step), a shape change on every rank (new results), a shape change on one
// rank (HVD_ERR_MISMATCH on every rank, then the runtime carries on), an
// allgather whose first dimension changes on one rank, a grouped allreduce
// and a broadcast from the cache, and a cached allreduce while a rank has
// joined (it contributes zeros). Exits non-zero on any failure, naming it.
#include <string>
#include <vector>

#include "allreduce_step.h"
#include "run_job.h"

using namespace mp;

namespace {

double value(int rank, size_t i, int step) {
  return static_cast<double>((rank + 1) * 10 + static_cast<int>(i % 7) + step);
}

double sum(size_t i, int step, int ranks) {
  double s = 0;
  for (int r = 0; r < ranks; ++r) s += value(r, i, step);
  return s;
}

// One step: `count` allreduces named step.t<k> of 3 * (k + 1) elements
// (`grow` more on tensor `grown`), enqueued together, in reverse order on
// odd ranks.
void allreduce_step(int step, int count, int grown = -1, int64_t grow = 0) {
  std::vector<Buffer> buffers;
  std::vector<std::string> names;
  for (int k = 0; k < count; ++k) {
    int64_t n = 3 * (k + 1) + (k == grown ? grow : 0);
    buffers.emplace_back(HVD_FLOAT32, std::vector<int64_t>{n});
    for (size_t i = 0; i < buffers.back().elements; ++i)
      buffers.back().set(i, value(R, i, step));
    names.push_back("step.t" + std::to_string(k));
  }
  mp::allreduce_step(step, buffers, names, {R % 2 == 1},
                     [&](size_t i) { return sum(i, step, N); });
}

void shape_change_on_one_rank() {
  // Cached as {6}; rank 1 now sends {7}: every rank fails it, naming it.
  Buffer b(HVD_FLOAT32, {R == 1 ? 7 : 6});
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, "step.t1", &b.desc, 1);
  hvd_handle* h = nullptr;
  expect_ok(hvd_enqueue(&op, &h), "enqueue step.t1 (mismatched)");
  if (!h) return;
  hvd_status s = hvd_wait(h, 60000);
  std::string message = hvd_handle_message(h);
  expect(s == HVD_ERR_MISMATCH, std::string("step.t1 after one rank's shape "
                                            "change: ") +
                                    hvd_status_string(s) + " " + message);
  expect(message.find("'step.t1'") != std::string::npos &&
             message.find("shape") != std::string::npos,
         "mismatch message: " + message);
  hvd_release(h);
}

void allgather_steps() {
  for (int step = 0; step < 4; ++step) {
    // From step 2, rank 0 sends one row more.
    int64_t rows = R + 1 + (R == 0 && step >= 2 ? 1 : 0);
    Buffer in(HVD_INT32, {rows, 2});
    for (size_t i = 0; i < in.elements; ++i) in.set(i, R * 100 + step);
    hvd_op op = make_op(HVD_COLL_ALLGATHER, "gather", &in.desc, 1);
    hvd_handle* h = nullptr;
    if (run_op(op, &h) != HVD_OK) continue;
    hvd_tensor out{};
    expect_ok(hvd_handle_output(h, 0, &out), "allgather output");
    int64_t total = 0;
    for (int r = 0; r < N; ++r) total += r + 1 + (r == 0 && step >= 2);
    expect(out.ndim == 2 && out.shape[0] == total && out.shape[1] == 2,
           "allgather step " + std::to_string(step) + ": rows " +
               std::to_string(out.shape[0]) + ", expected " +
               std::to_string(total));
    if (out.shape[0] == total) {
      size_t at = 0;
      for (int r = 0; r < N; ++r) {
        int64_t n = r + 1 + (r == 0 && step >= 2);
        for (int64_t k = 0; k < 2 * n; ++k, ++at) {
          double got = load(HVD_INT32, out.data, at);
          if (got != r * 100 + step) {
            expect(false, "allgather step " + std::to_string(step) +
                              ": element " + std::to_string(at) + " is " +
                              std::to_string(got));
            r = N;
            break;
          }
        }
      }
    }
    hvd_release(h);
  }
}

void grouped_and_broadcast_steps() {
  for (int step = 0; step < 3; ++step) {
    Buffer a(HVD_FLOAT64, {5}), b(HVD_FLOAT64, {2, 3});
    for (size_t i = 0; i < a.elements; ++i) a.set(i, value(R, i, step));
    for (size_t i = 0; i < b.elements; ++i) b.set(i, value(R, i, step));
    hvd_tensor group[2] = {a.desc, b.desc};
    if (run_op(make_op(HVD_COLL_ALLREDUCE, "group", group, 2)) == HVD_OK) {
      expect(a.get(4) == sum(4, step, N) && b.get(5) == sum(5, step, N),
             "grouped allreduce step " + std::to_string(step));
    }
    Buffer c(HVD_INT64, {4});
    for (size_t i = 0; i < 4; ++i) c.set(i, R == N - 1 ? 7 * step + 1 : -1);
    hvd_op op = make_op(HVD_COLL_BROADCAST, "bcast", &c.desc, 1);
    op.root = N - 1;
    if (run_op(op) == HVD_OK) {
      expect(c.get(3) == 7 * step + 1, "broadcast step " +
                                           std::to_string(step) + ": " +
                                           std::to_string(c.get(3)));
    }
  }
}

void cached_allreduce_with_a_joined_rank() {
  // "joined.t" is cached first; then the last rank joins and the others
  // run it again: the sum is theirs alone.
  for (int pass = 0; pass < 2; ++pass) {
    Buffer b(HVD_FLOAT32, {8});
    for (size_t i = 0; i < 8; ++i) b.set(i, R + 1);
    if (pass == 0 || R != N - 1) {
      hvd_op op = make_op(HVD_COLL_ALLREDUCE, "joined.t", &b.desc, 1);
      if (run_op(op) == HVD_OK) {
        int ranks = pass == 1 ? N - 1 : N;
        double want = ranks * (ranks + 1) / 2.0;
        expect(b.get(7) == want, "allreduce with a joined rank, pass " +
                                     std::to_string(pass) + ": " +
                                     std::to_string(b.get(7)) + ", expected " +
                                     std::to_string(want));
      }
    }
    if (pass == 1) join_and_wait();
  }
}

}  // namespace

int main(int argc, char** argv) {
  return run_job_per_config(argc, argv, "cache", [](const std::string&) {
    for (int step = 0; step < 8; ++step) allreduce_step(step, 6);
    // Every rank changes step.t0's shape: negotiated again, right results.
    for (int step = 8; step < 11; ++step) allreduce_step(step, 6, 0, 4);
    if (N >= 2) shape_change_on_one_rank();
    for (int step = 11; step < 14; ++step) allreduce_step(step, 6);
    allgather_steps();
    grouped_and_broadcast_steps();
    if (N >= 2) cached_allreduce_with_a_joined_rank();
  });
}
