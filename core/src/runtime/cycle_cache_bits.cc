// The response cache's fast path (Cycle::negotiate_by_cache_bits), as
// Horovod's CacheCoordinator: when no rank has anything the cache cannot
// stand for, a cycle is one bitwise allreduce of the cache bits over the
// data path (p2p/and_allreduce.h) instead of a gather to the coordinator
// and a broadcast back over the control plane. Every rank then derives the
// same response list from the same bits and the same cache.
//
// The exchanged words: word 0 is the complement of this rank's reasons to
// negotiate (so the AND gives the complement of their OR), then one bit per
// cache entry, set where this rank has the entry's op ready, or where this
// rank is no member of the entry's process set (the members decide).
#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "p2p/and_allreduce.h"
#include "p2p/engine.h"
#include "runtime/fusion.h"
#include "runtime/process_set.h"
#include "runtime/response_cache.h"
#include "runtime/cycle.h"
#include "runtime/failure.h"
#include "runtime/process_sets.h"
#include "runtime/stall_inspector.h"

namespace hvd::runtime {
namespace {

// Why a rank needs the coordinator this cycle.
enum Reason : uint64_t {
  // Requests the cache cannot stand for: new or changed ops, barriers,
  // joins, alltoalls, failed inputs, process set changes.
  kRequests = 1,
  kShutdown = 2,
  kJoined = 4,    // only the coordinator counts joined ranks in
  kLongWait = 8,  // the stall inspector must see what waits
  kTuned = 16,    // world rank 0's autotuner moved on: the control plane
                  // carries the new setting to every rank
};

std::string describe(uint64_t reasons) {
  static const char* names[] = {"requests", "shutdown", "join", "long wait",
                                "new autotune setting"};
  std::string out;
  for (int i = 0; i < 5; ++i) {
    if (reasons & (uint64_t{1} << i))
      out += (out.empty() ? "" : ", ") + std::string(names[i]);
  }
  return out;
}

}  // namespace

uint64_t Cycle::reasons_to_negotiate() const {
  uint64_t reasons = 0;
  if (!requests_.requests.empty()) reasons |= kRequests;
  if (requests_.shutdown) reasons |= kShutdown;
  if (pending_tuning_) reasons |= kTuned;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& set : sets_.all()) {
    if (set->join) reasons |= kJoined;
    if (!stall_check_ || (reasons & kLongWait)) continue;
    for (const auto& [name, op] : set->negotiating) {
      if (op->state() != OpState::kQueued &&
          now - op->negotiating_since > stall_fallback_) {
        reasons |= kLongWait;
        break;
      }
    }
  }
  return reasons;
}

bool Cycle::start_cache_bits_round(const Held&) {
  // Cache bits queue behind data on the transports' connections: while a
  // large response may still run somewhere, the control plane is quicker.
  if (!data_path_quiet_) return false;
  if (!p2p::AndAllreduce::tags_apart(engine_, sets_.next_id())) {
    return false;
  }
  const uint32_t bits = cache_->bit_count();
  sync_words_.assign(1 + (bits + 63) / 64, 0);
  sync_words_[0] = ~reasons_to_negotiate();
  const std::vector<uint64_t>& hits = requests_.cache_hits;
  std::copy_n(hits.begin(), std::min(hits.size(), sync_words_.size() - 1),
              sync_words_.begin() + 1);
  const bool outsider = sets_.has_outsider_sets();
  for (uint32_t bit = 0; outsider && bit < bits; ++bit) {
    if (!cache_->in_use(bit)) continue;
    const ProcessSet* set = sets_.find(cache_->at(bit).process_set);
    if (set && !set->member()) sync_words_[1 + bit / 64] |= 1ull << (bit % 64);
  }

  cache_sync_->start(sync_words_);
  return true;
}

bool Cycle::test_cache_bits_round(const Held&) {
  try {
    return cache_sync_->test();
  } catch (const Error& e) {
    failure_.data_path_failed(e);
  }
}

bool Cycle::finish_cache_bits_round(const Held& progress) {
  const uint32_t bits = cache_->bit_count();
  const std::vector<uint64_t>& all = cache_sync_->result();
  const uint64_t reasons = ~all[0];
  if (reasons != 0) {
    HVD_LOG(TRACE) << "negotiating over the control plane: "
                   << describe(reasons);
    return false;
  }
  ++cache_bits_rounds_;
  // The ready bits by process set (ProcessSets::all() order), each set's in bit order;
  // the responses are fused and planned from the cache in place.
  const auto& sets = sets_.all();
  ready_bits_.resize(sets.size());
  for (std::vector<uint32_t>& set_bits : ready_bits_) set_bits.clear();
  for (uint32_t bit = 0; bit < bits; ++bit) {
    if (!((all[1 + bit / 64] >> (bit % 64)) & 1) || !cache_->in_use(bit)) {
      continue;
    }
    const Response& cached = cache_->at(bit);
    const size_t index = sets_.index_of(cached.process_set);
    if (index == sets.size()) continue;
    if (stall_) stall_->resolved(cached.process_set, cached.entries[0].name);
    // Every member had it ready by this round.
    if (timeline_.on()) mark_arrived(*sets[index], cached.entries[0].name);
    ready_bits_[index].push_back(bit);
  }
  // Only the responses change between rounds: the list's other fields stay
  // as a fresh list has them.
  ResponseList& list = bit_list_;
  list.responses.clear();
  auto at = [this](uint32_t bit) -> const Response& { return cache_->at(bit); };
  for (size_t i = 0; i < sets.size(); ++i) {
    if (ready_bits_[i].empty()) continue;
    const size_t first = list.responses.size();
    fuse_cached(ready_bits_[i], at, fusion_threshold_, sets[i]->size(),
                list.responses);
    for (size_t r = first; r < list.responses.size(); ++r) {
      choose_reducer(list.responses[r], *sets[i]);
    }
  }
  if (autotuner_) tune(list, false);
  run_responses(progress, list);
  return true;
}

}  // namespace hvd::runtime
