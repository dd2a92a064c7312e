// Adasum through the C API, as one job: run with
//   horovodrun -np N reducers_adasum_job CONFIG.toml
// On a power-of-two job, several float32 tensors enqueued at once with op
// ADASUM (not fused: each gets its own coefficients) come back as the
// Adasum of the ranks' tensors; on any other size each fails on every rank
// with a message that says why. Exits non-zero on any failure, naming it.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "adasum_pair.h"
#include "run_job.h"

using namespace mp;

namespace {

// Rank r's element i of tensor t: tensors differ in how aligned the ranks'
// vectors are, so their coefficients differ.
double value(int t, int r, size_t i) {
  return t == 0 ? 1.0 + (double)(i % 5)  // equal on every rank
                : std::sin(0.37 * (double)(i + 1) * (r + 1) + t);
}

std::vector<double> reference(int t, size_t count, int first, int ranks) {
  if (ranks == 1) {
    std::vector<double> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = (float)value(t, first, i);
    return v;
  }
  return adasum_pair(reference(t, count, first, ranks / 2),
                     reference(t, count, first + ranks / 2, ranks / 2));
}

// The tensors enqueued at once, then each result (or error) checked.
void adasum_tensors() {
  const bool power_of_two = (N & (N - 1)) == 0;
  const size_t counts[] = {1000, 1, 4099, 0};
  const int tensors = 4;
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<std::string> names;
  std::vector<hvd_handle*> handles(tensors, nullptr);
  for (int t = 0; t < tensors; ++t) {
    buffers.push_back(std::make_unique<Buffer>(
        HVD_FLOAT32, std::vector<int64_t>{(int64_t)counts[t]}));
    for (size_t i = 0; i < counts[t]; ++i) {
      buffers[t]->set(i, value(t, R, i));
    }
    names.push_back("adasum." + std::to_string(t));
  }
  for (int t = 0; t < tensors; ++t) {  // all at once: they would fuse
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, names[t], &buffers[t]->desc, 1);
    op.op = HVD_OP_ADASUM;
    expect_ok(hvd_enqueue(&op, &handles[t]), "enqueue " + names[t]);
  }
  for (int t = 0; t < tensors; ++t) {
    if (!handles[t]) continue;
    const hvd_status s = hvd_wait(handles[t], 120000);
    const std::string message = hvd_handle_message(handles[t]);
    if (!power_of_two && counts[t] > 0) {  // an empty tensor moves nothing
      expect(s == HVD_ERR_UNSUPPORTED, names[t] + " on " + std::to_string(N) +
                                           " ranks: " + hvd_status_string(s) +
                                           ", expected unsupported");
      expect(message.find("power-of-two") != std::string::npos,
             names[t] + ": the message says why: " + message);
    } else {
      expect(s == HVD_OK,
             names[t] + ": " + hvd_status_string(s) + ": " + message);
      const std::vector<double> want = reference(t, counts[t], 0, N);
      for (size_t i = 0; i < counts[t] && s == HVD_OK; ++i) {
        const double got = buffers[t]->get(i);
        if (std::fabs(got - want[i]) >
            1e-5 * std::max(1.0, std::fabs(want[i]))) {
          expect(false, names[t] + " element " + std::to_string(i) + ": " +
                            std::to_string(got) + ", expected " +
                            std::to_string(want[i]));
          break;
        }
      }
    }
    hvd_release(handles[t]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return run_job(argc, argv, "adasum", adasum_tensors);
}
