// Sleeping on the wait fd until a peer's send wakes it; abort.
#include <poll.h>

#include <chrono>
#include <thread>

#include "cases.h"
#include "pattern.h"

namespace hvd_conformance {

using Clock = std::chrono::steady_clock;

namespace {

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) > 0;
}

}  // namespace

void case_wait_fd(CaseContext& ctx) {
  if (ctx.api.wait_fd == nullptr)
    throw CaseSkip("the transport has no wait fd");
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  const int fd = ctx.api.wait_fd(s.transport());
  if (fd < 0) throw CaseSkip("wait_fd returns -1");
  constexpr size_t kBytes = 4096;
  Buffer in(kBytes), out(kBytes);
  fill(out.data(), kBytes, seed_of(s.rank(), 0, 7, 0));
  uint64_t round = 0;
  for (int sleeper = 0; sleeper < s.size(); ++sleeper) {
    for (int waker = 0; waker < s.size(); ++waker) {
      if (waker == sleeper) continue;
      ++round;
      const uint64_t tag = spread_tag(ctx, 3000 + round);
      const std::string asleep = ctx.key("asleep");
      ctx.barrier();
      if (s.rank() == sleeper) {
        Op* r = s.recv(waker, in.data(), kBytes, tag);
        check(!s.test(r), "a receive completed before anything was sent");
        // With nothing to do the fd must not stay readable (or the core
        // would spin instead of sleeping).
        bool idle = false;
        for (int i = 0; i < 100 && !idle; ++i) {
          bool armed = ctx.api.wait_arm == nullptr ||
                       ctx.api.wait_arm(s.transport()) == HVD_OK;
          idle = armed && !readable(fd, 0);
          if (!idle) s.test(r);
        }
        check(idle, "the wait fd stays readable with nothing to do");
        ctx.world.put(asleep, Bytes{1});
        auto deadline = Clock::now() + std::chrono::seconds(10);
        while (!s.test(r)) {
          check(Clock::now() < deadline, "not woken by the send of rank " +
                                             std::to_string(waker) +
                                             " within 10 s");
          bool armed = ctx.api.wait_arm == nullptr ||
                       ctx.api.wait_arm(s.transport()) == HVD_OK;
          if (armed) {
            check(readable(fd, 10000),
                  "slept 10 s on the wait fd; the send of rank " +
                      std::to_string(waker) + " did not wake it");
          }
        }
        Session::expect_ok(r, kBytes);
        check(verify(in.data(), kBytes, seed_of(waker, 0, 7, 0)) < 0,
              "the message that woke the wait fd arrived wrong");
      } else if (s.rank() == waker) {
        ctx.world.get(sleeper, asleep, ctx.timeout());
        // Long enough for the sleeper to be asleep on the fd.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        s.wait(s.send(sleeper, out.data(), kBytes, tag));
      }
    }
  }
  ctx.barrier();
}

void case_abort(CaseContext& ctx) {
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  const hvd_status reason = HVD_ERR_ABORTED;
  const int32_t blamed = (s.rank() + 1) % s.size();
  constexpr size_t kBig = 4u << 20;
  Buffer in(1024), big(kBig), small(64);
  fill(big.data(), kBig, 1);
  fill(small.data(), 64, 2);
  std::vector<Op*> recvs, sends;
  for (int p : s.peers()) {
    // Nothing is ever sent with this tag: only abort can end the receive.
    recvs.push_back(s.recv(p, in.data(), 1024, spread_tag(ctx, 4000)));
    // Nobody receives this tag.
    sends.push_back(s.send(p, big.data(), kBig, spread_tag(ctx, 4001)));
  }
  // Abort from another thread while this one sleeps on the wait fd; a
  // second call changes nothing.
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ctx.api.abort(s.transport(), reason, blamed);
    ctx.api.abort(s.transport(), HVD_ERR_TIMEOUT, 12345);
  });
  try {
    s.wait(recvs);
  } catch (...) {
    aborter.join();
    throw;
  }
  aborter.join();
  for (Op* r : recvs) {
    check(r->result.status == reason && r->result.peer == blamed,
          "the " + r->what + " completed with " +
              status_text(r->result.status) + " (peer " +
              std::to_string(r->result.peer) + "), expected " +
              status_text(reason) + " (peer " + std::to_string(blamed) + ")");
  }
  s.wait(sends);
  for (Op* op : sends) {
    check(op->result.status == HVD_OK ||
              (op->result.status == reason && op->result.peer == blamed),
          "the " + op->what + " completed with " +
              status_text(op->result.status) + " after the abort");
  }
  check(ctx.api.abort(s.transport(), HVD_ERR_TIMEOUT, 1) == HVD_OK,
        "a repeated abort failed");
  // Later calls fail the same way: at once, or through their completion.
  for (int p : s.peers()) {
    hvd_request* r = nullptr;
    hvd_status st = ctx.api.isend(s.conn(p), small.data(), 64, 1, nullptr, &r);
    if (st == HVD_OK) {
      Op op{r, false, {}, "send after the abort"};
      s.wait(&op);
      st = op.result.status;
    }
    check(st == reason, "a send after the abort gave " + status_text(st) +
                            " instead of " + status_text(reason));
  }
  ctx.barrier();
}

}  // namespace hvd_conformance
