// The response cache's part of the cycle
// (response_cache.h): offering cached ops by their bits, the coordinator's
// AND over each set's members, and every rank applying the same changes in
// the order of the response list.
#include <algorithm>

#include "common/error.h"
#include "runtime/fusion.h"
#include "runtime/process_set.h"
#include "runtime/reducers.h"
#include "runtime/response_cache.h"
#include "runtime/cycle.h"
#include "runtime/process_sets.h"
#include "runtime/stall_inspector.h"

namespace hvd::runtime {

void Cycle::choose_reducer(Response& r, const ProcessSet& set) {
  if (r.kind != ResponseKind::kData) return;
  reducers_.candidates(r.collective, r.op, r.dtype, set.planning_team->view(),
                        r.mem_kind, response_bytes(r, set.size()), "",
                        candidates_);
  r.reducer = candidates_.empty() ? "" : reducers_.at(candidates_[0]).name();
  if (preferred_reducer_.empty()) return;
  for (size_t index : candidates_) {
    if (reducers_.at(index).name() == preferred_reducer_) {
      r.reducer = preferred_reducer_;  // the autotuner's, where it can run
      return;
    }
  }
}

void Cycle::offer_cached(const Held&) {
  requests_.cache_hits.clear();
  requests_.cache_stale.clear();
  // Looked up again each cycle: every rank's cache is the same at the start
  // of a cycle, so a bit means the same entry on all of them.
  size_t kept = 0;
  for (PendingOp* op : sets_.cached_waiting) {
    const ProcessSet* set = sets_.find(op->request.process_set);
    uint32_t bit = 0;
    switch (cache_->lookup(op->request, set->rank, &bit)) {
      case ResponseCache::Lookup::kHit:
        set_bit(requests_.cache_hits, bit);
        sets_.cached_waiting[kept++] = op;
        continue;
      case ResponseCache::Lookup::kStale:
        set_bit(requests_.cache_stale, bit);
        break;
      case ResponseCache::Lookup::kMiss:
        break;
    }
    op->move_to(OpState::kNegotiating);
    requests_.requests.push_back(op->request);
  }
  sets_.cached_waiting.resize(kept);
}

void Cycle::coordinate_cached(const Held&,
                                const std::vector<RequestList>& lists,
                                ResponseList& out) {
  if (cache_->capacity() == 0) return;
  std::vector<uint64_t> stale, any_hit;
  auto merge = [](std::vector<uint64_t>& into,
                  const std::vector<uint64_t>& words) {
    if (into.size() < words.size()) into.resize(words.size(), 0);
    for (size_t w = 0; w < words.size(); ++w) into[w] |= words[w];
  };
  for (const RequestList& list : lists) {
    merge(stale, list.cache_stale);
    merge(any_hit, list.cache_hits);
  }
  // Ready bits, per process set, in bit order.
  const auto& sets = sets_.all();
  std::vector<std::vector<Response>> ready(sets.size());
  for (uint32_t bit = 0; bit < any_hit.size() * 64; ++bit) {
    if (!test_bit(any_hit, bit) || !cache_->in_use(bit) ||
        test_bit(stale, bit)) {
      continue;
    }
    const Response& cached = cache_->at(bit);
    const size_t index = sets_.index_of(cached.process_set);
    if (index == sets.size()) continue;
    const ProcessSet& set = *sets[index];
    int32_t hits = 0, joined = 0;
    for (int32_t k = 0; k < set.size(); ++k) {
      if (test_bit(lists[set.world_ranks[k]].cache_hits, bit)) {
        ++hits;
      } else if (set.coordinator->has_joined(k)) {
        ++joined;
      }
    }
    if (hits > 0 && timeline_.on()) {
      mark_arrivals(set, cached.entries[0].name, lists, bit);
    }
    if (hits == 0) continue;
    if (hits + joined < set.size()) {
      if (stall_) {
        // A cached op some ranks have ready waits as a full request would.
        auto now = std::chrono::steady_clock::now();
        for (int32_t k = 0; k < set.size(); ++k) {
          if (test_bit(lists[set.world_ranks[k]].cache_hits, bit)) {
            stall_->submitted(set.id, set.world_ranks, cached.entries[0].name,
                              k, now, collective_name(cached.collective));
          }
        }
      }
      continue;
    }
    if (stall_) stall_->resolved(set.id, cached.entries[0].name);
    if (joined > 0 && cached.collective != HVD_COLL_ALLREDUCE) {
      // Full negotiation gives the error every rank should see.
      set_bit(stale, bit);
      continue;
    }
    Response r = cached;
    r.cache_bits = {bit};
    ready[index].push_back(std::move(r));
  }
  cached_responses(ready, out);
  for (uint32_t bit = 0; bit < stale.size() * 64; ++bit) {
    if (test_bit(stale, bit)) out.cache_erase.push_back(bit);
  }
}

void Cycle::cached_responses(std::vector<std::vector<Response>>& ready,
                               ResponseList& out) {
  const auto& sets = sets_.all();
  for (size_t i = 0; i < sets.size(); ++i) {
    if (ready[i].empty()) continue;
    for (Response& r :
         fuse(std::move(ready[i]), fusion_threshold_, sets[i]->size())) {
      choose_reducer(r, *sets[i]);
      out.responses.push_back(std::move(r));
    }
  }
}

void Cycle::apply_cache(const Held&, ResponseList& list) {
  for (Response& r : list.responses) {
    if (r.cache_bits.empty()) continue;
    // As it came over the control plane: bits and reducer alone. (The
    // cache-bit path fills them in as it fuses.)
    if (r.entries.empty()) {
      copy_header(cache_->at(r.cache_bits[0]), r);
      for (uint32_t bit : r.cache_bits) {
        r.entries.push_back(cache_->at(bit).entries[0]);
      }
    }
    for (uint32_t bit : r.cache_bits) cache_->touch(bit);
    ProcessSet* set = sets_.find(r.process_set);
    if (!set || !set->member()) continue;
    for (const Entry& e : r.entries) {
      auto it = set->negotiating.find(e.name);
      if (it != set->negotiating.end()) it->second->move_to(OpState::kQueued);
    }
  }
  for (uint32_t bit : list.cache_erase) cache_->erase(bit);
  for (const Response& r : list.responses) {
    if (r.cache_bits.empty()) cache_->put(r);
  }
  // Ops a cached response now runs are the executor's.
  std::vector<PendingOp*>& cached = sets_.cached_waiting;
  cached.erase(std::remove_if(cached.begin(), cached.end(),
                              [](PendingOp* op) {
                                return op->state() != OpState::kAwaitingCacheBits;
                              }),
               cached.end());
}

}  // namespace hvd::runtime
