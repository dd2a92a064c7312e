// The collectives of a Comm as rounds of phases (see comm.h): what each
// member does before it publishes a phase, and what it does once every
// member has published the last phase of a round.
#include <algorithm>
#include <cstring>

#include "comm.h"
#include "copy.h"
#include "horovod_plugin/boundary.h"
#include "transport.h"

namespace hvd_shm {
namespace {

// A member's share of a two-shot round of `elems` elements: cache-line
// multiples, the last ones possibly short or empty.
struct Share {
  uint64_t offset;
  uint64_t count;
};

Share share_of(uint64_t elems, int32_t size, int32_t rank, size_t esize) {
  uint64_t align = 64 / esize;
  uint64_t per = (elems + size - 1) / size;
  per = (per + align - 1) / align * align;
  uint64_t begin = std::min<uint64_t>(elems, per * rank);
  uint64_t end = std::min<uint64_t>(elems, begin + per);
  return {begin, end - begin};
}

}  // namespace

bool Comm::own_input_readable(const Op& op) const {
  // In place, the result overwrites the input after the first reduction.
  const uint64_t bytes = op.count * op.esize;
  if (op.send == op.recv) return rank_ < 2;
  return op.send + bytes <= op.recv || op.recv + bytes <= op.send;
}

uint32_t Comm::phases(const Op& op) const {
  return op.kind == Kind::kTwoShot ? 2 : 1;
}

void Comm::reduce(const Op& op, void* dst, const void* a, const void* b,
                  size_t count) const {
  const hvd_device_api* dev = t_.host()->device;
  hvd_status s = dev->reduce(dev->ctx, hvd_device{HVD_MEM_HOST, 0}, op.dtype,
                             op.op, dst, a, b, count, nullptr);
  if (s != HVD_OK) {
    hvd_plugin::fail(s, "shm: the host's reduction kernel failed");
  }
}

void Comm::run_phase(Op& op) {
  const uint64_t parity = Comm::parity(op);
  const uint64_t chunk = lane_slot_bytes(op);
  uint8_t* mine = slot(rank_, op);
  const size_t es = op.esize;
  switch (op.kind) {
    case Kind::kInline:
      std::memcpy(inline_slot(rank_, parity).data, op.send, op.count * es);
      break;
    case Kind::kOneShot:
      std::memcpy(mine, op.send, op.count * es);
      break;
    case Kind::kTwoShot: {
      const uint64_t first = op.round * op.round_elems;
      const uint64_t elems =
          std::min<uint64_t>(op.round_elems, op.count - first);
      const uint8_t* in = op.send + first * es;
      if (op.phase == 0) {
        // The others' shares of the round, for them to reduce.
        for (int32_t r = 0; r < size_; ++r) {
          if (r == rank_) continue;
          Share s = share_of(elems, size_, r, es);
          std::memcpy(mine + s.offset * es, in + s.offset * es, s.count * es);
        }
        break;
      }
      // Ours, in team order, into our slot (where the others read it).
      Share s = share_of(elems, size_, rank_, es);
      if (s.count == 0) break;
      auto part = [&](int32_t r) -> const uint8_t* {
        return (r == rank_ ? in : slot(r, op)) + s.offset * es;
      };
      uint8_t* acc = mine + s.offset * es;
      reduce(op, acc, part(0), part(1), s.count);
      for (int32_t r = 2; r < size_; ++r)
        reduce(op, acc, acc, part(r), s.count);
      copy_bytes(op.recv + (first + s.offset) * es, acc, s.count * es,
                 op.streaming);
      break;
    }
    case Kind::kBroadcast:
      if (rank_ == op.root) {
        const uint64_t at = op.round * chunk;
        std::memcpy(mine, op.recv + at,
                    std::min<uint64_t>(chunk, op.count * es - at));
      }
      break;
    case Kind::kAllgatherv: {
      const uint64_t at = op.round * chunk;
      const uint64_t bytes = op.count * es;
      if (at < bytes) {
        std::memcpy(mine, op.send + at, std::min<uint64_t>(chunk, bytes - at));
      }
      break;
    }
    case Kind::kBarrier:
      break;
  }
}

void Comm::finish_round(Op& op) {
  const uint64_t parity = Comm::parity(op);
  const uint64_t chunk = lane_slot_bytes(op);
  const size_t es = op.esize;
  switch (op.kind) {
    case Kind::kInline:
    case Kind::kOneShot: {
      // Every member the same reduction, in team order: the same bits.
      auto part = [&](int32_t r) -> const void* {
        if (r == rank_ && own_input_readable(op)) return op.send;
        return op.kind == Kind::kInline ? inline_slot(r, parity).data
                                        : slot(r, op);
      };
      reduce(op, op.recv, part(0), part(1), op.count);
      for (int32_t r = 2; r < size_; ++r) {
        reduce(op, op.recv, op.recv, part(r), op.count);
      }
      break;
    }
    case Kind::kTwoShot: {
      const uint64_t first = op.round * op.round_elems;
      const uint64_t elems =
          std::min<uint64_t>(op.round_elems, op.count - first);
      for (int32_t r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        Share s = share_of(elems, size_, r, es);
        copy_bytes(op.recv + (first + s.offset) * es,
                   slot(r, op) + s.offset * es, s.count * es, op.streaming);
      }
      break;
    }
    case Kind::kBroadcast:
      if (rank_ != op.root) {
        const uint64_t at = op.round * chunk;
        copy_bytes(op.recv + at, slot(op.root, op),
                   std::min<uint64_t>(chunk, op.count * es - at), op.streaming);
      }
      break;
    case Kind::kAllgatherv: {
      const uint64_t at = op.round * chunk;
      for (int32_t r = 0; r < size_; ++r) {
        const uint64_t bytes = op.counts[r] * es;
        if (at >= bytes) continue;
        copy_bytes(op.recv + op.displs[r] * es + at, slot(r, op),
                   std::min<uint64_t>(chunk, bytes - at), op.streaming);
      }
      break;
    }
    case Kind::kBarrier:
      break;
  }
}

}  // namespace hvd_shm
