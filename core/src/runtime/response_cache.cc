#include "runtime/response_cache.h"

#include "common/error.h"

namespace hvd::runtime {
namespace {

bool same_shapes(const Request& q, const Entry& e, hvd_collective collective,
                 int32_t set_rank) {
  if (q.shapes.size() != e.shapes.size()) return false;
  if (collective != HVD_COLL_ALLGATHER) return q.shapes == e.shapes;
  // An allgather's first dimension may differ between ranks: this rank's
  // is in per_rank, the rest must equal the entry's.
  for (size_t t = 0; t < q.shapes.size(); ++t) {
    const auto& mine = q.shapes[t];
    const auto& cached = e.shapes[t];
    if (mine.empty() || mine.size() != cached.size()) return false;
    if (t >= e.per_rank.size() || set_rank < 0 ||
        static_cast<size_t>(set_rank) >= e.per_rank[t].size() ||
        e.per_rank[t][set_rank] != mine[0]) {
      return false;
    }
    for (size_t d = 1; d < mine.size(); ++d) {
      if (mine[d] != cached[d]) return false;
    }
  }
  return true;
}

}  // namespace

ResponseCache::ResponseCache(size_t capacity) : capacity_(capacity) {}

std::string ResponseCache::key(int32_t process_set, const std::string& name) {
  return std::to_string(process_set) + "/" + name;
}

bool ResponseCache::cacheable(const Response& r) {
  if (r.kind != ResponseKind::kData) return false;
  switch (r.collective) {
    case HVD_COLL_ALLREDUCE:
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_BROADCAST:
    case HVD_COLL_REDUCESCATTER:
      return true;
    default:
      return false;  // alltoall's splits change from step to step
  }
}

ResponseCache::Lookup ResponseCache::lookup(const Request& q, int32_t set_rank,
                                            uint32_t* bit) const {
  if (capacity_ == 0) return Lookup::kMiss;
  auto it = by_key_.find(key(q.process_set, q.name));
  if (it == by_key_.end()) return Lookup::kMiss;
  *bit = it->second;
  const Response& r = slots_[it->second].response;
  bool same = q.failure_status == HVD_OK && q.splits.empty() &&
              q.collective == r.collective && q.dtype == r.dtype &&
              q.mem_kind == r.mem_kind && q.device_id == r.device_id &&
              q.op == r.op && q.prescale == r.prescale &&
              q.postscale == r.postscale && q.root == r.root &&
              same_shapes(q, r.entries[0], r.collective, set_rank);
  return same ? Lookup::kHit : Lookup::kStale;
}

void ResponseCache::put(const Response& response) {
  if (capacity_ == 0 || !cacheable(response)) return;
  for (const Entry& e : response.entries) {
    Response single = response;
    single.entries.clear();
    single.entries.push_back(e);
    single.reducer.clear();  // chosen again for each fused response
    single.cache_bits.clear();
    std::string k = key(response.process_set, e.name);
    auto found = by_key_.find(k);
    if (found != by_key_.end()) {
      Slot& slot = slots_[found->second];
      slot.response = std::move(single);
      lru_.splice(lru_.end(), lru_, slot.lru);
      ++stats_.puts;
      continue;
    }
    if (by_key_.size() >= capacity_) {
      remove(lru_.front());
      ++stats_.evictions;
    }
    uint32_t bit;
    if (!free_.empty()) {
      bit = *free_.begin();
      free_.erase(free_.begin());
    } else {
      bit = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& slot = slots_[bit];
    slot.used = true;
    slot.response = std::move(single);
    slot.lru = lru_.insert(lru_.end(), bit);
    by_key_.emplace(std::move(k), bit);
    ++stats_.puts;
  }
}

bool ResponseCache::in_use(uint32_t bit) const {
  return bit < slots_.size() && slots_[bit].used;
}

const Response& ResponseCache::at(uint32_t bit) const {
  if (!in_use(bit)) {
    throw Error(HVD_ERR_INTERNAL, "response cache: bit " + std::to_string(bit) +
                                      " is not in use (the ranks' caches "
                                      "differ)");
  }
  return slots_[bit].response;
}

void ResponseCache::touch(uint32_t bit) {
  Slot& slot = slots_[bit];
  lru_.splice(lru_.end(), lru_, slot.lru);
  ++stats_.hits;
}

void ResponseCache::erase(uint32_t bit) {
  if (!in_use(bit)) return;
  remove(bit);
  ++stats_.invalidations;
}

std::string ResponseCache::summary() const {
  return "response cache: " + std::to_string(stats_.hits) + " hits, " +
         std::to_string(stats_.puts) + " negotiated, " +
         std::to_string(stats_.evictions) + " evicted, " +
         std::to_string(stats_.invalidations) + " invalidated";
}

void ResponseCache::remove(uint32_t bit) {
  Slot& slot = slots_[bit];
  by_key_.erase(key(slot.response.process_set, slot.response.entries[0].name));
  lru_.erase(slot.lru);
  slot.used = false;
  slot.response = Response{};
  free_.insert(bit);
}

void ResponseCache::erase_process_set(int32_t process_set) {
  for (uint32_t bit = 0; bit < slots_.size(); ++bit) {
    if (slots_[bit].used && slots_[bit].response.process_set == process_set) {
      remove(bit);
    }
  }
}

void set_bit(std::vector<uint64_t>& words, uint32_t bit) {
  if (words.size() <= bit / 64) words.resize(bit / 64 + 1, 0);
  words[bit / 64] |= 1ull << (bit % 64);
}

bool test_bit(const std::vector<uint64_t>& words, uint32_t bit) {
  return bit / 64 < words.size() && (words[bit / 64] >> (bit % 64)) & 1;
}

}  // namespace hvd::runtime
