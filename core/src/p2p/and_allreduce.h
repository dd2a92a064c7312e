// A bitwise AND of a few 64-bit words over every member of a team, through
// the engine's point-to-point messages: the runtime's per-cycle exchange of
// response cache bits (an OR travels as the AND of inverted words).
//
// Recursive doubling over the largest power of two p <= n: each member
// exchanges its words with rank ^ 1, ^ 2, ^ 4 ... and ANDs what comes in;
// ranks p .. n-1 first hand theirs to rank - p and get the result back
// from it at the end. So a member waits ceil(log2 n) message latencies
// (two more for n not a power of two), and every member ends with the same
// words. Non-blocking: start(), then test() until it answers true. Every
// member calls start() in the same order, with vectors of the same length.
//
// Messages carry the process-set tag field all ones (whatever its width),
// so they never meet a data response's while every process set id stays
// below that value (tags_apart()); a sequence number per exchange keeps
// consecutive ones apart. Runs on the background thread.
#pragma once

#include <cstdint>
#include <vector>

#include "p2p/engine.h"

namespace hvd::p2p {

class AndAllreduce {
 public:
  // Over `team` (which must outlive this object).
  AndAllreduce(Engine& engine, const Team& team);
  AndAllreduce(const AndAllreduce&) = delete;
  AndAllreduce& operator=(const AndAllreduce&) = delete;

  // Whether process sets with ids below `set_id_limit` never share a tag
  // with these messages on any of the engine's transports.
  static bool tags_apart(const Engine& engine, uint32_t set_id_limit);

  // Starts an exchange of `words` (copied). The previous one must be done.
  void start(const std::vector<uint64_t>& words);
  // Drives the exchange; true once result() holds the AND over the team.
  // Throws hvd::Error naming the peer (world rank) when a message fails or
  // comes with another length than this rank's.
  bool test();
  const std::vector<uint64_t>& result() const { return words_; }

  uint64_t exchanges() const { return sequence_; }

 private:
  enum class Phase { kIdle, kFoldIn, kRound, kFoldOut, kDone };
  static constexpr uint32_t kFoldInStep = 0;
  static constexpr uint32_t kFirstRoundStep = 1;
  static constexpr uint32_t kFoldOutStep = 40;

  void post_phase();
  // Posts a send of words_ (copied first) and/or a receive to team rank
  // `peer`; either may be skipped.
  void post(int32_t peer, uint32_t step, bool send, bool receive);
  // Tests `req` (null: done); a failure throws.
  bool finished(hvd_p2p_request_s*& req, bool receiving);
  void combine();

  Engine& engine_;
  const Team& team_;
  hvd_p2p_s context_{};
  uint64_t sequence_ = 0;
  int32_t power_ = 1;  // the largest power of two <= team size
  Phase phase_ = Phase::kIdle;
  int32_t mask_ = 1;      // kRound: the partner is rank ^ mask_
  int32_t partner_ = -1;  // team rank of the messages in flight
  std::vector<uint64_t> words_, outgoing_, incoming_;
  bool combine_incoming_ = false;  // AND incoming_ in when both are done
  hvd_p2p_request_s* send_ = nullptr;
  hvd_p2p_request_s* recv_ = nullptr;
};

}  // namespace hvd::p2p
