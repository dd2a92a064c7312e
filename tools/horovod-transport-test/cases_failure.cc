// A peer that dies; a rank that cuts its own links.
#include <dlfcn.h>

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

namespace {

// The plugin's test-only fault hook (horovod_plugin/fault_hook.h), found in
// the library that holds its table's calls; null when it was built without.
using FaultArm = void (*)(int32_t action, int64_t after_posts);
FaultArm fault_arm_of(const hvd_transport_api& api) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(api.isend), &info) == 0 ||
      info.dli_fname == nullptr) {
    return nullptr;
  }
  void* lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  auto arm = reinterpret_cast<FaultArm>(dlsym(lib, "hvd_fault_arm"));
  dlclose(lib);  // still loaded: the suite holds it
  return arm;
}

constexpr int32_t kSever = 2;  // fault_hook.h's Action

// What a request or a post of `what` ended with, when the rank at fault
// must be `blamed`.
void expect_blamed(const std::string& what, hvd_status status, int32_t peer,
                   hvd_status expected, int blamed) {
  check(status == expected && peer == blamed,
        what + " ended with " + status_text(status) + " naming rank " +
            std::to_string(peer) + "; expected " + status_text(expected) +
            " naming rank " + std::to_string(blamed));
}

}  // namespace

void case_sever(CaseContext& ctx) {
  FaultArm arm = fault_arm_of(ctx.api);
  check(arm != nullptr,
        "the plugin has no hvd_fault_arm (built without HOROVOD_FAULT_HOOKS)");
  Session s(ctx);
  const int victim = s.size() - 1;
  s.connect_all(ConnectOrder::kTogether);
  Buffer in(s.size() * 1024);
  std::vector<Op*> pending;
  // Never sent: only the severing ends these.
  for (int p : s.peers()) {
    if (s.rank() != victim && (p != victim || ctx.options.silent_peers))
      continue;
    pending.push_back(
        s.recv(p, in.data() + p * 1024, 1024, spread_tag(ctx, 6000)));
  }
  // Nobody posts from here until the victim has: the hook strikes at the
  // next post of its plugin (the whole process, where ranks are threads).
  ctx.barrier();
  if (s.rank() == victim) {
    arm(kSever, 1);
    Buffer out(64);
    for (int p : s.peers()) {
      // Refused with HVD_ERR_ABORTED (the core then names this rank), or
      // taken and failed naming it.
      Op* op = nullptr;
      hvd_status st = s.try_send(p, out.data(), 64, spread_tag(ctx, 6001), &op);
      if (st == HVD_OK) {
        s.wait(op);
        expect_blamed(op->what, op->result.status, op->result.peer,
                      HVD_ERR_ABORTED, victim);
      } else {
        check(st == HVD_ERR_ABORTED,
              "a send to rank " + std::to_string(p) +
                  " after severing was refused with " + status_text(st) +
                  "; expected HVD_ERR_ABORTED (this side's own doing)");
      }
    }
  }
  ctx.barrier();
  s.wait(pending);
  // The victim's own requests name it; so do the survivors' on it.
  for (Op* op : pending) {
    expect_blamed(op->what, op->result.status, op->result.peer,
                  s.rank() == victim ? HVD_ERR_ABORTED : HVD_ERR_PEER_FAILED,
                  victim);
  }
}

}  // namespace hvd_conformance
