// mem_alloc, exported regions, iput / iget, remote_ptr, and sends from
// memory of mem_alloc().
#include <cstring>

#include "cases.h"
#include "pattern.h"

namespace hvd_conformance {

namespace {

// Slot of each rank in every region: a prime size, so offsets are odd.
constexpr uint64_t kSlot = (1u << 20) + 13;

struct Region {
  void* ptr = nullptr;
  hvd_mr* mr = nullptr;
};

}  // namespace

void case_one_sided(CaseContext& ctx) {
  if (!(ctx.props.flags & HVD_TRANSPORT_ONE_SIDED)) {
    throw CaseSkip("the transport has no one-sided memory (ONE_SIDED unset)");
  }
  const hvd_transport_api& api = ctx.api;
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  const int rank = s.rank();
  const hvd_device host{HVD_MEM_HOST, 0};

  // A region per rank: slot r holds rank r's own data for others to get;
  // the others' slots receive their puts.
  Region region;
  hvd_status st = api.mem_alloc(s.transport(), kSlot * s.size(), host,
                                &region.ptr, &region.mr);
  check(st == HVD_OK, "mem_alloc: " + status_text(st) + ": " + s.last_error());
  auto* base = static_cast<uint8_t*>(region.ptr);
  fill(base + rank * kSlot, kSlot, seed_of(rank, 0, 9, 0));

  uint8_t key[HVD_TRANSPORT_MR_KEY_MAX + sizeof(uint32_t)] = {};
  size_t key_bytes = HVD_TRANSPORT_MR_KEY_MAX;
  st = api.mr_export(s.transport(), region.mr, key + sizeof(uint32_t),
                     &key_bytes);
  check(st == HVD_OK, "mr_export: " + status_text(st) + ": " + s.last_error());
  uint32_t kb = static_cast<uint32_t>(key_bytes);
  std::memcpy(key, &kb, sizeof(kb));
  std::vector<Bytes> keys = ctx.allgather(Bytes(key, key + sizeof(key)));

  std::vector<hvd_remote_mr*> remote(s.size(), nullptr);
  for (int p : s.peers()) {
    uint32_t len;
    std::memcpy(&len, keys[p].data(), sizeof(len));
    st = api.mr_import(s.conn(p), keys[p].data() + sizeof(uint32_t), len,
                       &remote[p]);
    check(st == HVD_OK, "mr_import of rank " + std::to_string(p) +
                            "'s region: " + status_text(st) + ": " +
                            s.last_error());
  }

  // Put into every peer's region, in this rank's slot.
  std::vector<Buffer> mine;
  std::vector<Op> puts;
  puts.reserve(s.size());
  for (int p : s.peers()) {
    mine.emplace_back(kSlot);
    fill(mine.back().data(), kSlot, seed_of(rank, p, 9, 1));
    hvd_request* r = nullptr;
    st = api.iput(s.conn(p), mine.back().data(), nullptr, remote[p],
                  rank * kSlot, kSlot, &r);
    check(st == HVD_OK, "iput to rank " + std::to_string(p) + ": " +
                            status_text(st) + ": " + s.last_error());
    puts.push_back(Op{r, false, {}, "put to rank " + std::to_string(p)});
  }
  std::vector<Op*> ops;
  for (Op& op : puts) ops.push_back(&op);
  s.wait(ops);
  for (Op* op : ops) Session::expect_ok(op, kSlot);
  ctx.barrier();
  for (int p : s.peers()) {
    int64_t at = verify(base + p * kSlot, kSlot, seed_of(p, rank, 9, 1));
    check(at < 0, "the put of rank " + std::to_string(p) + " left byte " +
                      std::to_string(at) + " wrong");
  }

  // Get every peer's own slot; read it through remote_ptr too.
  std::vector<Buffer> theirs;
  std::vector<Op> gets;
  gets.reserve(s.size());
  for (int p : s.peers()) {
    theirs.emplace_back(kSlot);
    hvd_request* r = nullptr;
    st = api.iget(s.conn(p), theirs.back().data(), nullptr, remote[p],
                  p * kSlot, kSlot, &r);
    check(st == HVD_OK, "iget from rank " + std::to_string(p) + ": " +
                            status_text(st) + ": " + s.last_error());
    gets.push_back(Op{r, false, {}, "get from rank " + std::to_string(p)});
  }
  ops.clear();
  for (Op& op : gets) ops.push_back(&op);
  s.wait(ops);
  size_t i = 0;
  for (int p : s.peers()) {
    Session::expect_ok(&gets[i], kSlot);
    check(verify(theirs[i].data(), kSlot, seed_of(p, 0, 9, 0)) < 0,
          "the get from rank " + std::to_string(p) + " brought wrong bytes");
    if (api.remote_ptr != nullptr) {
      void* direct = api.remote_ptr(remote[p]);
      if (direct != nullptr) {
        check(verify(static_cast<uint8_t*>(direct) + p * kSlot, kSlot,
                     seed_of(p, 0, 9, 0)) < 0,
              "remote_ptr of rank " + std::to_string(p) +
                  "'s region shows wrong bytes");
      }
    }
    ++i;
  }
  ctx.barrier();

  // Sends from memory of mem_alloc, large and small, received into ordinary
  // memory, posted before and after the message arrives.
  constexpr uint64_t kLarge = (8u << 20) + 5;
  Region sendable;
  st = api.mem_alloc(s.transport(), kLarge, host, &sendable.ptr, &sendable.mr);
  check(st == HVD_OK, "mem_alloc: " + status_text(st) + ": " + s.last_error());
  auto* src = static_cast<uint8_t*>(sendable.ptr);
  fill(src, kLarge, seed_of(rank, 0, 9, 2));
  for (int round = 0; round < 2; ++round) {
    for (uint64_t bytes : {kLarge, uint64_t{1000}}) {
      uint64_t tag = spread_tag(ctx, 6000 + round * 2 + (bytes == kLarge));
      std::vector<std::pair<int, Buffer>> in;
      in.reserve(s.size());
      std::vector<Op*> recvs, all;
      auto post_recvs = [&] {
        for (int p : s.peers()) {
          in.emplace_back(p, Buffer(bytes));
          recvs.push_back(s.recv(p, in.back().second.data(), bytes, tag));
          all.push_back(recvs.back());
        }
      };
      if (round == 0) post_recvs();
      for (int p : s.peers()) {
        Op* op = nullptr;
        do {
          st = s.try_send(p, src, bytes, tag, &op);
          if (st == HVD_AGAIN) s.sleep(std::chrono::milliseconds(1));
        } while (st == HVD_AGAIN);
        check(st == HVD_OK, "isend from mem_alloc memory: " + status_text(st));
        all.push_back(op);
      }
      if (round == 1) {
        ctx.barrier();
        post_recvs();
      }
      s.wait(all);
      for (Op* op : all) Session::expect_ok(op, bytes);
      for (auto& [p, buf] : in) {
        check(verify(buf.data(), bytes, seed_of(p, 0, 9, 2)) < 0,
              "a send of " + std::to_string(bytes) + " bytes from rank " +
                  std::to_string(p) + "'s mem_alloc memory arrived wrong");
      }
    }
  }
  ctx.barrier();

  for (int p : s.peers()) {
    check(api.mr_release(s.conn(p), remote[p]) == HVD_OK, "mr_release failed");
  }
  check(api.mem_free(s.transport(), sendable.ptr, sendable.mr) == HVD_OK,
        "mem_free failed");
  check(api.mem_free(s.transport(), region.ptr, region.mr) == HVD_OK,
        "mem_free failed");
}

}  // namespace hvd_conformance
