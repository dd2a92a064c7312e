// A known sequence of ops with the timeline on (run under horovodrun with
// HOROVOD_TIMELINE and cycle marks set, see check_timeline.py): three steps
// of a grouped allreduce (always through the fusion buffer), a broadcast and
// an allgather, then a single allreduce alone (in place); then the trace is
// stopped, ops run untraced, a second trace is started at run time without
// cycle marks, and one more step runs into it.
//
//   timeline_job <dynamic trace path>
#include <cstdio>
#include <string>
#include <vector>

#include "run_job.h"

using namespace mp;

namespace {

void run_and_wait(std::vector<hvd_op> ops) {
  std::vector<hvd_handle*> handles;
  for (const hvd_op& op : ops) {
    hvd_handle* h = nullptr;
    expect_ok(hvd_enqueue(&op, &h), std::string("enqueue ") + op.name);
    if (h) handles.push_back(h);
  }
  for (hvd_handle* h : handles) {
    expect_ok(hvd_wait(h, 60000), "wait");
    hvd_release(h);
  }
}

// One step of ops whose names start with `prefix`.
void step(const std::string& prefix) {
  static std::vector<std::string> names;
  names = {prefix + "grouped", prefix + "single", prefix + "bcast",
           prefix + "gather"};
  Buffer g1(HVD_FLOAT32, {1024}), g2(HVD_FLOAT32, {333});
  hvd_tensor group[2] = {g1.desc, g2.desc};
  Buffer single(HVD_FLOAT32, {4096});
  Buffer bcast(HVD_FLOAT32, {100});
  Buffer gather(HVD_FLOAT32, {2, 3});
  hvd_op grouped = make_op(HVD_COLL_ALLREDUCE, names[0].c_str(), group, 2);
  hvd_op one = make_op(HVD_COLL_ALLREDUCE, names[1].c_str(), &single.desc, 1);
  hvd_op b = make_op(HVD_COLL_BROADCAST, names[2].c_str(), &bcast.desc, 1);
  hvd_op a = make_op(HVD_COLL_ALLGATHER, names[3].c_str(), &gather.desc, 1);
  run_and_wait({grouped, b, a});
  run_and_wait({one});  // alone, so nothing is fused with it
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return usage(argv[0], "<dynamic trace path>");
  const char* dynamic_trace = argv[1];
  JobOptions options;
  options.after_shutdown = [dynamic_trace] {
    expect(hvd_start_timeline(dynamic_trace, 0) == HVD_ERR_SHUT_DOWN,
           "start after shutdown is refused");
  };
  return run_once(
      "timeline", nullptr,
      [dynamic_trace] {
        for (int s = 0; s < 3; ++s) step("static.");
        expect_ok(hvd_stop_timeline(), "hvd_stop_timeline");
        step("gap.");
        expect(hvd_start_timeline("", 0) == HVD_ERR_INVALID_ARGUMENT,
               "an empty path is refused");
        expect_ok(hvd_start_timeline(dynamic_trace, 0), "hvd_start_timeline");
        step("dynamic.");
        expect_ok(hvd_stop_timeline(), "hvd_stop_timeline (dynamic)");
        step("after.");
      },
      options);
}
