#include "p2p/and_allreduce.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/error.h"

namespace hvd::p2p {
namespace {

constexpr uint32_t kAllOnes = std::numeric_limits<uint32_t>::max();

}  // namespace

AndAllreduce::AndAllreduce(Engine& engine, const Team& team)
    : engine_(engine), team_(team) {
  while (power_ * 2 <= team_.size()) power_ *= 2;
}

bool AndAllreduce::tags_apart(const Engine& engine, uint32_t set_id_limit) {
  for (const auto& transport : engine.transports()) {
    const uint32_t bits =
        TagLayout(transport->properties().tag_bits).set_bits();
    if (bits >= 32) continue;
    // Ids below the all-ones value of the field never wrap onto it.
    if (set_id_limit > (uint32_t{1} << bits) - 1) return false;
  }
  return true;
}

void AndAllreduce::start(const std::vector<uint64_t>& words) {
  if (phase_ != Phase::kIdle && phase_ != Phase::kDone) {
    throw Error(HVD_ERR_INTERNAL,
                "cache bit exchange: started while one is in flight");
  }
  words_ = words;
  engine_.reset_context(&context_, &team_, kAllOnes, ++sequence_);
  const int32_t me = team_.rank();
  const int32_t extra = team_.size() - power_;
  if (team_.size() == 1) {
    phase_ = Phase::kDone;
  } else if (me >= power_ || me < extra) {
    phase_ = Phase::kFoldIn;
  } else {
    phase_ = Phase::kRound;
  }
  mask_ = 1;
  if (phase_ != Phase::kDone) post_phase();
}

void AndAllreduce::post_phase() {
  const int32_t me = team_.rank();
  combine_incoming_ = false;
  switch (phase_) {
    case Phase::kFoldIn:
      if (me >= power_) {
        post(me - power_, kFoldInStep, true, false);
      } else {
        post(me + power_, kFoldInStep, false, true);
        combine_incoming_ = true;
      }
      return;
    case Phase::kRound: {
      uint32_t round = 0;
      while ((1 << round) < mask_) ++round;
      post(me ^ mask_, kFirstRoundStep + round, true, true);
      combine_incoming_ = true;
      return;
    }
    case Phase::kFoldOut:
      if (me < power_) {
        post(me + power_, kFoldOutStep, true, false);
      } else {
        post(me - power_, kFoldOutStep, false, true);  // the result
      }
      return;
    case Phase::kIdle:
    case Phase::kDone:
      return;
  }
}

void AndAllreduce::post(int32_t peer, uint32_t step, bool send, bool receive) {
  partner_ = peer;
  const size_t bytes = words_.size() * sizeof(uint64_t);
  auto check = [&](hvd_status s, const char* what) {
    if (s == HVD_OK) return;
    const int32_t world = team_.world_rank(peer);
    throw Error(s,
                std::string("cache bit exchange: ") + what + " rank " +
                    std::to_string(world) + " failed: " + engine_.last_error(),
                world);
  };
  if (send) {
    outgoing_ = words_;
    check(engine_.isend(&context_, peer, outgoing_.data(), bytes, step, &send_),
          "sending to");
  }
  if (receive) {
    incoming_.resize(words_.size());
    check(engine_.irecv(&context_, peer, incoming_.data(), bytes, step, &recv_),
          "receiving from");
  }
}

bool AndAllreduce::finished(hvd_p2p_request_s*& req, bool receiving) {
  if (!req) return true;
  int32_t done = 0;
  hvd_completion c{};
  c.struct_size = sizeof(c);
  c.peer = -1;
  hvd_status s = engine_.test(req, &done, &c);
  if (s == HVD_OK && !done) return false;
  req = nullptr;
  const int32_t world = team_.world_rank(partner_);
  const hvd_status status = s != HVD_OK ? s : c.status;
  if (status != HVD_OK) {
    throw Error(status,
                "cache bit exchange with rank " + std::to_string(world) +
                    " failed (" + status_name(status) +
                    "): " + engine_.last_error(),
                c.peer >= 0 ? c.peer : world);
  }
  if (receiving && c.bytes != words_.size() * sizeof(uint64_t)) {
    throw Error(HVD_ERR_INTERNAL,
                "cache bit exchange: rank " + std::to_string(world) + " sent " +
                    std::to_string(c.bytes) + " bytes, this rank expected " +
                    std::to_string(words_.size() * sizeof(uint64_t)) +
                    " (the ranks' response caches differ)");
  }
  return true;
}

void AndAllreduce::combine() {
  for (size_t w = 0; w < words_.size(); ++w) words_[w] &= incoming_[w];
}

bool AndAllreduce::test() {
  while (phase_ != Phase::kDone && phase_ != Phase::kIdle) {
    const bool sent = finished(send_, false);
    const bool received = finished(recv_, true);
    if (!sent || !received) return false;
    const int32_t me = team_.rank();
    const int32_t extra = team_.size() - power_;
    switch (phase_) {
      case Phase::kFoldIn:
        if (combine_incoming_) combine();
        phase_ = me >= power_ ? Phase::kFoldOut : Phase::kRound;
        break;
      case Phase::kRound:
        combine();
        mask_ <<= 1;
        if (mask_ < power_) break;
        phase_ = me < extra ? Phase::kFoldOut : Phase::kDone;
        break;
      case Phase::kFoldOut:
        if (me >= power_) std::swap(words_, incoming_);
        phase_ = Phase::kDone;
        break;
      case Phase::kIdle:
      case Phase::kDone:
        break;
    }
    if (phase_ != Phase::kDone) post_phase();
  }
  return true;
}

}  // namespace hvd::p2p
