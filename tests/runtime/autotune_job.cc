// Autotune through the whole runtime, as one job: run with
//   horovodrun -np N --autotune --autotune-log-file FILE runtime_autotune_job
//       CONFIG.toml
// Steps of mixed-size allreduces (checked every step, while the autotuner
// switches fusion thresholds, cycle times and reducers under them) until
// rank 0 finds the autotuner's CSV log ends with the setting it settled
// on; then a few more steps, and rank 0 checks the log's lines.
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "run_job.h"

using namespace mp;

namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

bool settled(const std::vector<std::string>& lines) {
  return !lines.empty() && lines.back().find(",settled,") != std::string::npos;
}

void step(int index) {
  const int kTensors = 16;
  std::vector<Buffer> buffers;
  std::vector<std::string> names;
  for (int k = 0; k < kTensors; ++k) {
    buffers.emplace_back(HVD_FLOAT32,
                         std::vector<int64_t>{int64_t{256} << (k % 6)});
    for (size_t i = 0; i < buffers.back().elements; ++i)
      buffers.back().set(i, R + 1 + (i + index) % 5);
    names.push_back("grad." + std::to_string(k));
  }
  std::vector<hvd_handle*> handles(kTensors, nullptr);
  for (int k = kTensors - 1; k >= 0; --k) {
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, names[k], &buffers[k].desc, 1);
    expect_ok(hvd_enqueue(&op, &handles[k]), "enqueue " + names[k]);
  }
  for (int k = 0; k < kTensors; ++k) {
    if (!handles[k]) continue;
    hvd_status s = hvd_wait(handles[k], 60000);
    expect(s == HVD_OK, names[k] + ": " + hvd_handle_message(handles[k]));
    hvd_release(handles[k]);
    if (s != HVD_OK) continue;
    for (size_t i = 0; i < buffers[k].elements; i += 97) {
      double want =
          N * (N + 1) / 2.0 + N * static_cast<double>((i + index) % 5);
      if (buffers[k].get(i) != want) {
        expect(false, "step " + std::to_string(index) + " " + names[k] +
                          ": element " + std::to_string(i) + " is " +
                          std::to_string(buffers[k].get(i)) + ", expected " +
                          std::to_string(want));
        break;
      }
    }
  }
}

// Steps until rank 0 finds the autotuner settled in its `log`, a few more,
// then rank 0 checks the log.
void tune_until_settled(const std::string& log) {
  int steps = 0;
  bool done = false;
  while (!done && steps < 3000 && !g_failures) {
    step(steps++);
    Buffer flag(HVD_INT32, {1});
    flag.set(0, R == 0 && settled(read_lines(log)) ? 1 : 0);
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, "settled?", &flag.desc, 1);
    op.op = HVD_OP_MAX;
    run_op(op);
    done = flag.get(0) == 1;
  }
  expect(done,
         "the autotuner did not settle in " + std::to_string(steps) + " steps");
  for (int k = 0; k < 5; ++k) step(steps++);
  if (R == 0) {
    std::vector<std::string> lines = read_lines(log);
    expect(lines.size() >= 4,
           "the log has " + std::to_string(lines.size()) + " lines");
    expect(!lines.empty() && lines[0].rfind("sample,stage,", 0) == 0,
           "the log's header");
    int samples = 0;
    for (const std::string& line : lines) {
      if (line.find(",fusion_threshold,") != std::string::npos) ++samples;
    }
    expect(samples >= 2,
           "fusion threshold samples: " + std::to_string(samples));
    std::printf("rank 0: autotune settled after %d steps: %s\n", steps,
                lines.empty() ? "" : lines.back().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* log = getenv("HOROVOD_AUTOTUNE_LOG");
  if (argc != 2 || !log) {
    return usage("horovodrun --autotune --autotune-log-file FILE " +
                     std::string(argv[0]),
                 "CONFIG.toml");
  }
  return run_once("autotune", argv[1], [log] { tune_until_settled(log); });
}
