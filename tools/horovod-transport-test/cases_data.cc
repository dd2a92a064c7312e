// Messages: every size, many at once, tag matching, truncation,
// back-pressure.
#include <algorithm>
#include <cstring>
#include <map>

#include "cases.h"
#include "pattern.h"

namespace hvd_conformance {

namespace {

// 0 B to 256 MiB: edges, primes, and sizes around powers of two.
const uint64_t kSizes[] = {0,        1,        2,        3,       7,
                           61,       127,      1021,     4093,    8191,
                           65521,    65536,    131071,   1048573, 4194301,
                           16777213, 67108859, 268435456};

std::string from(int peer) { return " from rank " + std::to_string(peer); }

void expect_pattern(const uint8_t* data, uint64_t bytes, uint64_t seed,
                    const std::string& what) {
  int64_t at = verify(data, bytes, seed);
  check(at < 0, what + ": byte " + std::to_string(at) + " of " +
                    std::to_string(bytes) + " is wrong");
}

}  // namespace

void case_sizes(CaseContext& ctx) {
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  int k = 0;
  for (uint64_t size : kSizes) {
    ++k;
    if (size > ctx.options.max_bytes) continue;
    uint64_t tag = spread_tag(ctx, static_cast<uint64_t>(k));
    Buffer out(size);
    fill(out.data(), size, seed_of(s.rank(), size, 1, 0));
    std::map<int, Buffer> in;
    std::vector<Op*> ops;
    std::vector<std::pair<int, Op*>> recvs;
    auto post_recvs = [&] {
      for (int p : s.peers()) {
        in.emplace(p, Buffer(size));
        Op* r = s.recv(p, in[p].data(), size, tag);
        recvs.push_back({p, r});
        ops.push_back(r);
      }
    };
    auto post_sends = [&] {
      for (int p : s.peers()) ops.push_back(s.send(p, out.data(), size, tag));
    };
    // Alternate which comes first, so both the posted and the unexpected
    // path carry every size range.
    if (k % 2 == 0) {
      post_recvs();
      post_sends();
    } else {
      post_sends();
      post_recvs();
    }
    s.wait(ops);
    for (Op* op : ops) Session::expect_ok(op, size);
    for (auto& [p, r] : recvs) {
      expect_pattern(in[p].data(), size, seed_of(p, size, 1, 0), r->what);
    }
  }
}

void case_many_in_flight(CaseContext& ctx) {
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  const uint32_t count = std::min<uint32_t>(200, ctx.props.max_requests);
  auto size_of = [](uint32_t i) -> uint64_t {
    if (i % 50 == 49) return (1u << 20) + i;  // a few large ones among them
    return (i * 7919u) % 65536u + (i % 3);
  };
  for (int round = 0; round < 2; ++round) {
    std::map<int, std::vector<Buffer>> in;
    std::vector<Buffer> out;
    for (uint32_t i = 0; i < count; ++i) {
      out.emplace_back(size_of(i));
      fill(out.back().data(), size_of(i), seed_of(s.rank(), i, 2, round));
    }
    std::vector<Op*> ops;
    auto post_recvs = [&] {
      for (int p : s.peers()) {
        for (uint32_t i = 0; i < count; ++i) {
          in[p].emplace_back(size_of(i));
          ops.push_back(s.recv(p, in[p].back().data(), size_of(i),
                               spread_tag(ctx, 1000 + i)));
        }
      }
    };
    auto post_sends = [&] {
      for (uint32_t i = 0; i < count; ++i) {
        for (int p : s.peers()) {
          ops.push_back(
              s.send(p, out[i].data(), size_of(i), spread_tag(ctx, 1000 + i)));
        }
      }
    };
    if (round == 0) {
      post_recvs();
      post_sends();
    } else {
      post_sends();
      post_recvs();
    }
    s.wait(ops);
    for (Op* op : ops)
      check(op->result.status == HVD_OK,
            "the " + op->what + " failed: " + status_text(op->result.status));
    for (auto& [p, bufs] : in) {
      for (uint32_t i = 0; i < count; ++i) {
        expect_pattern(bufs[i].data(), size_of(i), seed_of(p, i, 2, round),
                       "message " + std::to_string(i) + from(p));
      }
    }
  }
}

void case_tag_matching(CaseContext& ctx) {
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  constexpr uint32_t kCount = 24;
  auto size_of = [](uint32_t i) -> uint64_t {
    if (i == 7) return (4u << 20) + 1;
    if (i % 5 == 0) return (256u << 10) + i;
    return i * 37u;
  };
  std::vector<Buffer> out;
  for (uint32_t i = 0; i < kCount; ++i) {
    out.emplace_back(size_of(i));
    fill(out.back().data(), size_of(i), seed_of(s.rank(), i, 3, 0));
  }
  // Receives posted in reverse and in a scrambled order; sends in order.
  for (int phase = 0; phase < 2; ++phase) {
    std::vector<uint32_t> order(kCount);
    for (uint32_t i = 0; i < kCount; ++i) {
      order[i] = phase == 0 ? kCount - 1 - i : (i * 7) % kCount;
    }
    std::map<int, std::vector<Buffer>> in;
    std::vector<Op*> ops;
    auto post_recvs = [&] {
      for (int p : s.peers()) {
        in[p].resize(kCount);
        for (uint32_t i : order) {
          in[p][i] = Buffer(size_of(i));
          ops.push_back(
              s.recv(p, in[p][i].data(), size_of(i), spread_tag(ctx, 500 + i)));
        }
      }
    };
    auto post_sends = [&] {
      for (uint32_t i = 0; i < kCount; ++i) {
        for (int p : s.peers()) {
          ops.push_back(
              s.send(p, out[i].data(), size_of(i), spread_tag(ctx, 500 + i)));
        }
      }
    };
    if (phase == 0) {
      post_recvs();
      post_sends();
    } else {
      // Every message arrives before its receive is posted.
      post_sends();
      ctx.barrier();
      post_recvs();
    }
    s.wait(ops);
    for (Op* op : ops)
      check(op->result.status == HVD_OK,
            "the " + op->what + " failed: " + status_text(op->result.status));
    for (auto& [p, bufs] : in) {
      for (uint32_t i = 0; i < kCount; ++i) {
        expect_pattern(bufs[i].data(), size_of(i), seed_of(p, i, 3, 0),
                       "the message of tag " +
                           std::to_string(spread_tag(ctx, 500 + i)) + from(p));
      }
    }
  }
  // One tag several times, around another: same-tag messages match in the
  // order sent.
  const uint64_t t = spread_tag(ctx, 900), u = spread_tag(ctx, 901);
  const uint64_t sizes[] = {100, 3000, 70000, 12};
  const uint64_t tags[] = {t, u, t, t};
  std::vector<Buffer> msgs;
  std::vector<Op*> ops;
  for (int j = 0; j < 4; ++j) {
    msgs.emplace_back(sizes[j]);
    fill(msgs.back().data(), sizes[j], seed_of(s.rank(), j, 4, 0));
    for (int p : s.peers()) {
      ops.push_back(s.send(p, msgs.back().data(), sizes[j], tags[j]));
    }
  }
  std::map<int, std::vector<Buffer>> in;
  std::map<int, std::vector<Op*>> recvs;
  for (int p : s.peers()) {
    // Receive the other tag first, then the three of `t`, each buffer big
    // enough for any of them.
    in[p].emplace_back(70000);
    recvs[p].push_back(s.recv(p, in[p].back().data(), 70000, u));
    for (int j = 0; j < 3; ++j) {
      in[p].emplace_back(70000);
      recvs[p].push_back(s.recv(p, in[p].back().data(), 70000, t));
    }
    for (Op* r : recvs[p]) ops.push_back(r);
  }
  s.wait(ops);
  const int expect[] = {1, 0, 2, 3};  // which message each receive gets
  for (int p : s.peers()) {
    for (int j = 0; j < 4; ++j) {
      int m = expect[j];
      Session::expect_ok(recvs[p][j], sizes[m]);
      expect_pattern(in[p][j].data(), sizes[m], seed_of(p, m, 4, 0),
                     "receive " + std::to_string(j) + " of tag " +
                         std::to_string(tags[m]) + from(p) +
                         " (same-tag order)");
    }
  }
}

void case_truncation(CaseContext& ctx) {
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  struct Step {
    uint64_t send_bytes, recv_bytes;
    bool recv_first;
  };
  const Step steps[] = {{1000, 4096, true},
                        {5000, 100, true},
                        {3u << 20, 1u << 20, false},
                        {7, 6, false},
                        {64, 64, true}};
  uint64_t k = 0;
  for (const Step& step : steps) {
    uint64_t tag = spread_tag(ctx, 600 + k++);
    Buffer out(step.send_bytes);
    fill(out.data(), step.send_bytes, seed_of(s.rank(), k, 5, 0));
    std::map<int, Buffer> in;
    std::map<int, Op*> recvs;
    std::vector<Op*> ops;
    auto post_recvs = [&] {
      for (int p : s.peers()) {
        in.emplace(p, Buffer(step.recv_bytes));
        recvs[p] = s.recv(p, in[p].data(), step.recv_bytes, tag);
        ops.push_back(recvs[p]);
      }
    };
    if (step.recv_first) post_recvs();
    for (int p : s.peers()) {
      ops.push_back(s.send(p, out.data(), step.send_bytes, tag));
    }
    if (!step.recv_first) {
      ctx.barrier();
      post_recvs();
    }
    s.wait(ops);
    for (int p : s.peers()) {
      const Op* r = recvs[p];
      if (step.send_bytes <= step.recv_bytes) {
        Session::expect_ok(r, step.send_bytes);
        expect_pattern(in[p].data(), step.send_bytes, seed_of(p, k, 5, 0),
                       r->what);
      } else {
        check(r->result.status == HVD_ERR_TRUNCATED,
              "a message of " + std::to_string(step.send_bytes) +
                  " bytes into a receive of " +
                  std::to_string(step.recv_bytes) + " bytes completed with " +
                  status_text(r->result.status) +
                  " instead of HVD_ERR_TRUNCATED");
      }
    }
    for (Op* op : ops) {
      if (op->what.rfind("send", 0) == 0)
        Session::expect_ok(op, step.send_bytes);
    }
  }
}

void case_back_pressure(CaseContext& ctx) {
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  constexpr uint64_t kBytes = 64u << 10;
  const uint32_t cap = std::min<uint32_t>(ctx.props.max_requests, 16384) + 2048;
  Buffer out(kBytes);
  fill(out.data(), kBytes, seed_of(s.rank(), 0, 6, 0));
  // Each rank in turn floods every peer while the others stay out of the
  // transport, so nothing drains and the transport must push back.
  std::vector<uint32_t> sent(s.size(), 0);
  std::vector<Op*> ops;
  for (int flooder = 0; flooder < s.size(); ++flooder) {
    ctx.barrier();
    if (s.rank() != flooder) continue;
    for (int p : s.peers()) {
      bool pushed_back = false;
      while (sent[p] < cap) {
        Op* op = nullptr;
        hvd_status st = s.try_send(p, out.data(), kBytes,
                                   spread_tag(ctx, 2000 + sent[p]), &op);
        if (st == HVD_AGAIN) {
          pushed_back = true;
          break;
        }
        check(st == HVD_OK, "isend to rank " + std::to_string(p) + ": " +
                                status_text(st) + ": " + s.last_error());
        ops.push_back(op);
        ++sent[p];
      }
      check(pushed_back, "no HVD_AGAIN after " + std::to_string(sent[p]) +
                             " sends of 64 KiB to rank " + std::to_string(p) +
                             " that nobody receives (max_requests " +
                             std::to_string(ctx.props.max_requests) + ")");
    }
  }
  ctx.barrier();
  // Everyone learns how many to expect, then receives them all.
  Bytes mine(sizeof(uint32_t) * s.size());
  std::memcpy(mine.data(), sent.data(), mine.size());
  std::vector<Bytes> all = ctx.allgather(mine);
  std::map<int, std::vector<Buffer>> in;
  std::map<int, std::vector<Op*>> recvs;
  for (int p : s.peers()) {
    uint32_t n;
    std::memcpy(&n, all[p].data() + sizeof(uint32_t) * s.rank(), sizeof(n));
    for (uint32_t i = 0; i < n; ++i) {
      in[p].emplace_back(kBytes);
      recvs[p].push_back(
          s.recv(p, in[p].back().data(), kBytes, spread_tag(ctx, 2000 + i)));
      ops.push_back(recvs[p].back());
    }
  }
  s.wait(ops);
  for (Op* op : ops) Session::expect_ok(op, kBytes);
  for (auto& [p, list] : recvs) {
    for (size_t i = 0; i < list.size(); ++i) {
      expect_pattern(in[p][i].data(), kBytes, seed_of(p, 0, 6, 0),
                     list[i]->what);
    }
  }
  // And the connection carries on after being pushed back.
  ping_all(s, spread_tag(ctx, 1999));
}

}  // namespace hvd_conformance
