#include "p2p/and_allreduce.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "common/error.h"
#include "fake_transport.h"

namespace hvd::p2p {
namespace {

// `n` engines, every pair joined by a fake connection, and one exchange
// object per rank over the world team.
struct World {
  explicit World(int32_t n, FakeOptions options = {}) {
    std::vector<int> hosts(n, 0);
    std::vector<int32_t> ranks(n);
    for (int32_t r = 0; r < n; ++r) ranks[r] = r;
    for (int32_t r = 0; r < n; ++r) {
      engines.push_back(std::make_unique<Engine>(r, n, 0));
      fakes.push_back(fake_transport(options));
      transports.push_back(
          engines[r]->add_transport(std::make_unique<Transport>(
              "intra", "transport 'fake'", fake_transport_api(), fakes[r],
              nullptr)));
      teams.push_back(std::make_unique<Team>(ranks, r, hosts, 0, 0));
    }
    for (int32_t a = 0; a < n; ++a) {
      for (int32_t b = a + 1; b < n; ++b) {
        hvd_conn_s *ca, *cb;
        fake_connect(fakes[a], a, fakes[b], b, &ca, &cb);
        engines[a]->add_link(b, transports[a], ca);
        engines[b]->add_link(a, transports[b], cb);
      }
    }
    for (int32_t r = 0; r < n; ++r) {
      exchanges.push_back(
          std::make_unique<AndAllreduce>(*engines[r], *teams[r]));
    }
  }
  // Tests every rank's exchange in turn until all are done.
  void drive() {
    for (int i = 0; i < 1000; ++i) {
      bool all = true;
      for (auto& x : exchanges) all = x->test() && all;
      if (all) return;
    }
    FAIL() << "the exchange did not finish";
  }
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<hvd_transport_s*> fakes;
  std::vector<Transport*> transports;
  std::vector<std::unique_ptr<Team>> teams;
  std::vector<std::unique_ptr<AndAllreduce>> exchanges;
};

std::vector<std::vector<uint64_t>> random_words(int32_t n, size_t count,
                                                uint32_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::vector<uint64_t>> words(n, std::vector<uint64_t>(count));
  for (auto& w : words) {
    // Mostly ones, so the AND keeps some bits.
    for (auto& x : w) x = gen() | gen() | gen();
  }
  return words;
}

std::vector<uint64_t> and_of(const std::vector<std::vector<uint64_t>>& all) {
  std::vector<uint64_t> out(all[0].size(), ~uint64_t{0});
  for (const auto& w : all) {
    for (size_t i = 0; i < w.size(); ++i) out[i] &= w[i];
  }
  return out;
}

TEST(AndAllreduce, EveryRankGetsTheAndForAnyTeamSize) {
  for (int32_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9}) {
    World world(n);
    for (uint32_t round = 0; round < 3; ++round) {
      auto words = random_words(n, 1 + round, n * 10 + round);
      for (int32_t r = 0; r < n; ++r) world.exchanges[r]->start(words[r]);
      world.drive();
      const auto want = and_of(words);
      for (int32_t r = 0; r < n; ++r) {
        EXPECT_EQ(world.exchanges[r]->result(), want)
            << n << " ranks, rank " << r << ", exchange " << round;
      }
    }
  }
}

TEST(AndAllreduce, AnOrTravelsAsTheAndOfInvertedWords) {
  World world(3);
  for (int32_t r = 0; r < 3; ++r) {
    world.exchanges[r]->start({~(uint64_t{1} << r)});  // one flag per rank
  }
  world.drive();
  EXPECT_EQ(~world.exchanges[2]->result()[0], 0b111u);
}

TEST(AndAllreduce, ARankAheadStartsTheNextExchangeWithoutMixingThem) {
  const int32_t n = 5;
  World world(n);
  auto first = random_words(n, 2, 1), second = random_words(n, 2, 2);
  for (int32_t r = 0; r < n; ++r) world.exchanges[r]->start(first[r]);
  // Whoever finishes first starts the second at once.
  std::vector<int> stage(n, 0);
  for (int i = 0; i < 1000; ++i) {
    bool all = true;
    for (int32_t r = 0; r < n; ++r) {
      if (stage[r] == 2) continue;
      if (!world.exchanges[r]->test()) {
        all = false;
        continue;
      }
      if (stage[r] == 0) {
        EXPECT_EQ(world.exchanges[r]->result(), and_of(first)) << r;
        world.exchanges[r]->start(second[r]);
        stage[r] = 1;
        all = false;
      } else {
        EXPECT_EQ(world.exchanges[r]->result(), and_of(second)) << r;
        stage[r] = 2;
      }
    }
    if (all) break;
  }
  for (int32_t r = 0; r < n; ++r) EXPECT_EQ(stage[r], 2) << r;
}

TEST(AndAllreduce, TagsCarryTheAllOnesSetAndASequence) {
  World world(2);
  for (int round = 0; round < 2; ++round) {
    world.exchanges[0]->start({1});
    world.exchanges[1]->start({3});
    world.drive();
  }
  TagLayout layout(64);
  ASSERT_EQ(world.fakes[0]->sent.size(), 2u);
  TagFields f = layout.decompose(world.fakes[0]->sent[1].tag);
  EXPECT_EQ(f.process_set, (1u << layout.set_bits()) - 1);
  EXPECT_EQ(f.sequence, 2u);
  EXPECT_EQ(world.exchanges[0]->exchanges(), 2u);

  EXPECT_TRUE(AndAllreduce::tags_apart(*world.engines[0], 4095));
  EXPECT_FALSE(AndAllreduce::tags_apart(*world.engines[0], 4096));
  FakeOptions narrow;
  narrow.tag_bits = 15;  // one bit for the set: only set 0 stays apart
  World small(2, narrow);
  EXPECT_TRUE(AndAllreduce::tags_apart(*small.engines[0], 1));
  EXPECT_FALSE(AndAllreduce::tags_apart(*small.engines[0], 2));
}

TEST(AndAllreduce, WordsOfAnotherLengthFailNamingThePeer) {
  World world(2);
  world.exchanges[0]->start({1, 2, 3});
  world.exchanges[1]->start({1, 2});
  try {
    world.drive();
    FAIL() << "no error";
  } catch (const Error& e) {
    // This rank's own error (the caches differ), not the peer's failure.
    EXPECT_EQ(e.status(), HVD_ERR_INTERNAL);
    EXPECT_EQ(e.peer(), -1);
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hvd::p2p
