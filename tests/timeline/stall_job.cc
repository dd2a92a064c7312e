// The stall inspector in a job of 3 ranks (see check_stall.py, which reads
// what rank 0 logs). First, with stall-warn.toml: rank 1 holds back a new
// tensor and then a tensor already in the response cache for 2.5 s while
// the others wait; both complete once it submits. Then, with
// stall-shutdown.toml: rank 2 never submits 'stuck.y'; the job must fail on
// every rank, each op's message naming the tensor and the missing rank.
//
//   stall_job <stall-warn.toml> <stall-shutdown.toml>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "run_job.h"

using namespace mp;

namespace {

void init(const char* config) {
  if (!init_job(config)) ++g_failures;
}

void allreduce(const char* name, bool late) {
  if (late) usleep(2500 * 1000);
  Buffer b(HVD_FLOAT32, {16});
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1);
  hvd_handle* h = nullptr;
  expect_ok(hvd_enqueue(&op, &h), std::string("enqueue ") + name);
  if (!h) return;
  expect_ok(hvd_wait(h, 60000), std::string("wait ") + name);
  hvd_release(h);
}

void warnings(const char* config) {
  init(config);
  allreduce("stalled.fresh", R == 1);
  allreduce("stalled.cached", false);  // negotiated once: now cached
  allreduce("stalled.cached", R == 1);
  expect_ok(hvd_shutdown(), "hvd_shutdown");
}

void shutdown(const char* config) {
  init(config);
  Buffer b(HVD_FLOAT32, {16});
  const char* name = R == 2 ? "other.z" : "stuck.y";
  // 'other.z' stalls too (ranks 0 and 1 never submit it); submitted a
  // second later, it reaches the shutdown time after 'stuck.y' does.
  if (R == 2) sleep(1);
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1);
  hvd_handle* h = nullptr;
  expect_ok(hvd_enqueue(&op, &h), std::string("enqueue ") + name);
  if (h) {
    hvd_status s = hvd_wait(h, 30000);
    std::string message = hvd_handle_message(h);
    expect(s != HVD_OK && s != HVD_ERR_TIMEOUT,
           std::string("the stalled op did not fail: ") + hvd_status_string(s));
    expect(message.find("'stuck.y'") != std::string::npos &&
               message.find("missing ranks 2") != std::string::npos,
           "the failure does not name the tensor and the missing rank: " +
               message);
    std::printf("rank %d: failed as expected: %s\n", R, message.c_str());
    hvd_release(h);
  }
  hvd_shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    return usage(argv[0], "<warn.toml> <shutdown.toml>");
  }
  warnings(argv[1]);
  shutdown(argv[2]);
  std::printf("rank %d: %s\n", R, g_failures ? "FAILED" : "done");
  std::fflush(stdout);
  return g_failures ? 1 : 0;
}
