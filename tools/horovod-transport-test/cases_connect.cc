// Properties, connection set-up in either order, epoch mismatch.
#include <chrono>

#include "cases.h"
#include "pattern.h"

namespace hvd_conformance {

using Clock = std::chrono::steady_clock;

uint64_t spread_tag(const CaseContext& ctx, uint64_t i) {
  uint32_t bits = ctx.props.tag_bits;
  uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  // Distinct for distinct i while i < 2^bits; the high bits vary too.
  uint64_t spread = i * 0x9E3779B97F4A7C15ull;
  if (bits < 64) spread = i;
  return spread & mask;
}

void ping_all(Session& s, uint64_t tag) {
  constexpr size_t kBytes = 61;
  std::vector<Buffer> in;
  Buffer out(kBytes);
  fill(out.data(), kBytes, seed_of(s.rank(), tag, 0, 0));
  std::vector<Op*> ops;
  std::vector<std::pair<int, Op*>> recvs;
  for (int p : s.peers()) {
    in.emplace_back(kBytes);
    Op* r = s.recv(p, in.back().data(), kBytes, tag);
    recvs.push_back({p, r});
    ops.push_back(r);
  }
  for (int p : s.peers()) ops.push_back(s.send(p, out.data(), kBytes, tag));
  s.wait(ops);
  for (Op* op : ops) Session::expect_ok(op, kBytes);
  for (size_t i = 0; i < recvs.size(); ++i) {
    check(verify(in[i].data(), kBytes, seed_of(recvs[i].first, tag, 0, 0)) < 0,
          "the message from rank " + std::to_string(recvs[i].first) +
              " arrived with the wrong contents");
  }
}

void case_properties(CaseContext& ctx) {
  const hvd_transport_api& api = ctx.api;
  const hvd_transport_properties& p = ctx.props;
  check(api.kind == HVD_PLUGIN_TRANSPORT, "the table's kind is not transport");
  check(api.name != nullptr && api.name[0] != '\0', "the table has no name");
  check(api.last_error(nullptr) != nullptr, "last_error(NULL) returned NULL");
  check(
      p.struct_size >= HVD_STRUCT_SIZE(hvd_transport_properties, handle_bytes),
      "get_properties filled only " + std::to_string(p.struct_size) + " bytes");
  check(p.handle_bytes > 0 && p.handle_bytes <= HVD_TRANSPORT_HANDLE_MAX,
        "handle_bytes " + std::to_string(p.handle_bytes) +
            " is not in [1, HVD_TRANSPORT_HANDLE_MAX]");
  check(p.tag_bits >= 1 && p.tag_bits <= 64,
        "tag_bits " + std::to_string(p.tag_bits) + " is not in [1, 64]");
  check(p.max_requests >= 1, "max_requests is 0");
  check(p.max_message_bytes >= 1, "max_message_bytes is 0");
  check(p.mem_kinds & HVD_MEM_BIT(HVD_MEM_HOST),
        "the transport cannot send from host memory");
  check(p.bandwidth_gbps > 0 && p.latency_us > 0,
        "bandwidth and latency estimates must be positive");
  if (p.flags & HVD_TRANSPORT_ONE_SIDED) {
    check(api.mem_alloc && api.mem_free && api.mr_export && api.mr_import &&
              api.mr_release && api.iput && api.iget,
          "ONE_SIDED is set but a one-sided function is missing");
  }
  // Two instances side by side in one process.
  Session a(ctx), b(ctx);
  a.listen();
  b.listen();
  if (api.wait_fd != nullptr) {
    check(api.wait_fd(a.transport()) != api.wait_fd(b.transport()) ||
              api.wait_fd(a.transport()) < 0,
          "two instances share one wait fd");
  }
}

void case_connect_before_accept(CaseContext& ctx) {
  Session s(ctx);
  s.connect_all(ConnectOrder::kConnectFirst);
  ping_all(s, spread_tag(ctx, 1));
}

void case_accept_before_connect(CaseContext& ctx) {
  Session s(ctx);
  s.connect_all(ConnectOrder::kAcceptFirst);
  ping_all(s, spread_tag(ctx, 2));
}

namespace {

struct Attempt {
  hvd_conn* conn = nullptr;
  int peer = -1;  // connector side: the rank connected to
  hvd_status status = HVD_AGAIN;
};

}  // namespace

void case_epoch_mismatch(CaseContext& ctx) {
  Session s(ctx);
  s.listen();
  const hvd_transport_api& api = ctx.api;
  const int rank = s.rank();
  const uint64_t wrong = s.epoch() + 1;

  // Connect to every lower rank from the wrong epoch; accept from every
  // higher one at the right epoch. Both ends must refuse.
  std::vector<Attempt> out, in;
  for (int p = 0; p < rank; ++p) {
    hvd_conn_info info{sizeof(info), rank, p, wrong};
    Attempt a;
    a.peer = p;
    hvd_status st =
        api.connect(s.transport(), s.handle(p).data(), &info, &a.conn);
    if (st != HVD_OK) {
      check(st == HVD_ERR_EPOCH_MISMATCH,
            "connect to rank " + std::to_string(p) + " at epoch " +
                std::to_string(wrong) + " failed with " + status_text(st) +
                " instead of HVD_ERR_EPOCH_MISMATCH");
      a.status = st;
      a.conn = nullptr;
    }
    out.push_back(a);
  }
  size_t need = static_cast<size_t>(s.size() - rank - 1);
  auto deadline = Clock::now() + ctx.timeout();
  for (;;) {
    bool changed = false;
    while (in.size() < need) {
      hvd_conn_info info{sizeof(info), rank, -1, s.epoch()};
      Attempt a;
      hvd_status st = api.accept(s.listener(), &info, &a.conn);
      if (st == HVD_AGAIN) break;
      check(st == HVD_OK, "accept: " + status_text(st) + ": " + s.last_error());
      in.push_back(a);
      changed = true;
    }
    bool all = in.size() == need;
    for (auto* list : {&out, &in}) {
      for (Attempt& a : *list) {
        if (a.status != HVD_AGAIN) continue;
        a.status = api.conn_test(a.conn);
        if (a.status == HVD_AGAIN) {
          all = false;
          continue;
        }
        changed = true;
        std::string side =
            list == &out
                ? "connecting to rank " + std::to_string(a.peer) +
                      " from epoch " + std::to_string(wrong)
                : "accepting a connection from epoch " + std::to_string(wrong) +
                      " at epoch " + std::to_string(s.epoch());
        check(a.status == HVD_ERR_EPOCH_MISMATCH,
              side + ": conn_test gave " + status_text(a.status) +
                  " instead of HVD_ERR_EPOCH_MISMATCH");
      }
    }
    if (all) break;
    check(Clock::now() < deadline,
          "the epoch mismatch was not reported within the timeout (" +
              std::to_string(in.size()) + " of " + std::to_string(need) +
              " connections accepted)");
    if (!changed) s.sleep(std::chrono::milliseconds(1));
  }
  for (auto* list : {&out, &in}) {
    for (Attempt& a : *list) {
      if (a.conn != nullptr) api.conn_close(a.conn);
    }
  }
  ctx.barrier();
  // The listener still serves connections from the right epoch.
  s.connect_all(ConnectOrder::kTogether);
  ping_all(s, spread_tag(ctx, 3));
}

}  // namespace hvd_conformance
