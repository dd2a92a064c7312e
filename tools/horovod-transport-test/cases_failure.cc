// A peer that dies.
#include "cases.h"
#include "pattern.h"

namespace hvd_conformance {

void case_peer_death(CaseContext& ctx) {
  Session s(ctx);
  const int victim = s.size() - 1;
  // Everyone reaches the barrier, whatever happened before it, so the victim
  // dies at the agreed point.
  std::string setup_failure;
  constexpr size_t kBig = 64u << 20;
  Buffer in(4096), big;
  std::vector<Op*> ops;
  try {
    s.connect_all(ConnectOrder::kTogether);
    if (s.rank() != victim) {
      big = Buffer(kBig);
      fill(big.data(), kBig, 3);
      // Never sent, never received: only the death ends them.
      ops.push_back(s.recv(victim, in.data(), 4096, spread_tag(ctx, 5000)));
      ops.push_back(s.send(victim, big.data(), kBig, spread_tag(ctx, 5001)));
    }
  } catch (const CaseFailure& f) {
    setup_failure = f.what();
  }
  ctx.barrier();
  if (s.rank() == victim) {
    ctx.world.die([&] {
      // What the kernel does for a process that exits.
      ctx.api.finalize(s.transport());
      s.abandon();
    });
  }
  check(setup_failure.empty(), setup_failure);
  s.wait(ops);
  for (Op* op : ops) {
    check(op->result.status == HVD_ERR_PEER_FAILED && op->result.peer == victim,
          "the " + op->what + " completed with " +
              status_text(op->result.status) + " (peer " +
              std::to_string(op->result.peer) + ") after rank " +
              std::to_string(victim) +
              " died; expected HVD_ERR_PEER_FAILED naming it");
  }
  // The survivors still talk to each other.
  constexpr size_t kBytes = 100;
  Buffer out(kBytes);
  fill(out.data(), kBytes, seed_of(s.rank(), 0, 8, 0));
  std::vector<Op*> alive;
  std::vector<std::pair<int, Buffer>> got;
  got.reserve(s.size());
  for (int p : s.peers()) {
    if (p == victim) continue;
    got.emplace_back(p, Buffer(kBytes));
    alive.push_back(s.recv(p, got.back().second.data(), kBytes, 9));
    alive.push_back(s.send(p, out.data(), kBytes, 9));
  }
  s.wait(alive);
  for (Op* op : alive) Session::expect_ok(op, kBytes);
  for (auto& [p, buf] : got) {
    check(verify(buf.data(), kBytes, seed_of(p, 0, 8, 0)) < 0,
          "after the death, the message from rank " + std::to_string(p) +
              " arrived wrong");
  }
}

}  // namespace hvd_conformance
