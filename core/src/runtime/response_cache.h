// The response cache: responses negotiated before, kept under their
// (process set, name) at a bit position, so a later step with the same
// tensor skips full negotiation. Each cycle a rank sends, instead of the
// request, the bit of every cached op it has ready (and the bit of a cached
// entry its op no longer matches: a shape or dtype change); the coordinator
// runs a bit once every member of its set has it, and erases the bits any
// rank found stale.
//
// Every rank keeps an identical cache: all changes (put, touch, erase) are
// made in the order of the response list every rank receives, so bits,
// contents and the least-recently-used order agree everywhere. Entries are
// single-entry data responses (fused responses are cached per entry). Pure
// logic, tested alone.
#pragma once

#include <cstdint>
#include <list>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/messages.h"

namespace hvd::runtime {

class ResponseCache {
 public:
  // `capacity` entries; 0 turns the cache off (every lookup misses).
  explicit ResponseCache(size_t capacity);

  enum class Lookup {
    kMiss,   // never negotiated (or evicted): full negotiation
    kHit,    // cached and `request` matches it: `bit` may be sent
    kStale,  // cached, but `request` differs: send `bit` as stale
  };
  // Compares `request` as set rank `set_rank` submits it with the cached
  // response of its (process set, name).
  Lookup lookup(const Request& request, int32_t set_rank, uint32_t* bit) const;

  // Whether responses of this kind and collective are cached at all.
  static bool cacheable(const Response& response);
  // Caches every entry of `response` (when cacheable), each as a response
  // of its own; an entry already cached is replaced in place and becomes
  // the most recently used. A full cache evicts its least recently used.
  void put(const Response& response);
  // The cached single-entry response at `bit` (which must be in use).
  const Response& at(uint32_t bit) const;
  bool in_use(uint32_t bit) const;
  // A cached response ran: now the most recently used.
  void touch(uint32_t bit);
  void erase(uint32_t bit);  // an invalidation
  void erase_process_set(int32_t process_set);

  size_t capacity() const { return capacity_; }
  size_t size() const { return by_key_.size(); }
  // One past the highest bit position ever used: the bit vectors' length.
  uint32_t bit_count() const { return static_cast<uint32_t>(slots_.size()); }

  struct Stats {
    uint64_t hits = 0;  // entries run from the cache
    uint64_t puts = 0;  // entries cached after full negotiation
    uint64_t evictions = 0;
    uint64_t invalidations = 0;
  };
  const Stats& stats() const { return stats_; }
  // "response cache: 1200 hits, 12 negotiated, 0 evicted, 1 invalidated".
  std::string summary() const;

 private:
  struct Slot {
    bool used = false;
    Response response;
    std::list<uint32_t>::iterator lru;
  };
  static std::string key(int32_t process_set, const std::string& name);

  size_t capacity_;
  std::vector<Slot> slots_;  // by bit
  std::set<uint32_t> free_;  // freed bits, reused lowest first
  std::unordered_map<std::string, uint32_t> by_key_;
  std::list<uint32_t> lru_;  // least recently used first
  Stats stats_;

  void remove(uint32_t bit);
};

// Bit vectors as 64-bit words.
void set_bit(std::vector<uint64_t>& words, uint32_t bit);
bool test_bit(const std::vector<uint64_t>& words, uint32_t bit);

}  // namespace hvd::runtime
