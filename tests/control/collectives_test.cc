// gather and broadcast on 1..8 in-process ranks, small and 64 KiB messages,
// several tree widths.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "harness.h"

namespace hvd::test {
namespace {

std::vector<uint8_t> message_of(int rank, int round, size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i)
    bytes[i] = static_cast<uint8_t>(rank * 31 + round * 7 + i);
  return bytes;
}

struct Case {
  int size;
  int arity;
  size_t bytes;
};

class Collectives : public ::testing::TestWithParam<Case> {};

TEST_P(Collectives, GatherAndBroadcastAgreeWithTheReference) {
  const Case c = GetParam();
  const int rounds = c.bytes > 1024 ? 5 : 50;
  auto options = test_options();
  options.tree_arity = c.arity;
  std::atomic<int> checked{0};
  FakeStore store;
  auto errors = run_ranks(
      store, c.size, all_ranks(c.size), options, [&](ControlPlane& plane) {
        ASSERT_EQ(plane.size(), c.size);
        for (int round = 0; round < rounds; ++round) {
          // Vary sizes across ranks, including empty messages.
          size_t mine = (plane.rank() + round) % 3 == 0 ? 0 : c.bytes;
          auto gathered = plane.gather(message_of(plane.rank(), round, mine));
          if (plane.rank() == 0) {
            ASSERT_EQ(gathered.size(), static_cast<size_t>(c.size));
            for (int r = 0; r < c.size; ++r) {
              size_t theirs = (r + round) % 3 == 0 ? 0 : c.bytes;
              ASSERT_EQ(gathered[r], message_of(r, round, theirs))
                  << "rank " << r;
            }
          } else {
            ASSERT_TRUE(gathered.empty());
          }
          auto root = message_of(1000, round, c.bytes + round);
          auto got = plane.broadcast(
              plane.rank() == 0 ? root : std::vector<uint8_t>{9});
          ASSERT_EQ(got, root);
        }
        EXPECT_FALSE(plane.failure().has_value());
        checked++;
      });
  for (size_t r = 0; r < errors.size(); ++r)
    EXPECT_EQ(errors[r], nullptr)
        << "rank " << r << ": " << describe(errors[r]);
  EXPECT_EQ(checked.load(), c.size);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int n = 1; n <= 8; ++n) out.push_back({n, 4, 100});
  for (int n : {3, 5, 8}) out.push_back({n, 2, 100});
  for (int n : {7}) out.push_back({n, 1, 100});  // a chain: the deepest tree
  for (int n : {2, 5, 8}) out.push_back({n, 4, 64 * 1024});
  out.push_back({7, 2, 64 * 1024});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::to_string(info.param.size) +
                                  "ranks_arity" +
                                  std::to_string(info.param.arity) + "_" +
                                  std::to_string(info.param.bytes) + "B";
                         });

TEST(Collectives, BroadcastsAndGathersInterleaveInAnyAgreedOrder) {
  FakeStore store;
  auto errors = run_ranks(
      store, 5, all_ranks(5), test_options(), [&](ControlPlane& plane) {
        std::vector<uint8_t> root{1, 2, 3};
        for (int i = 0; i < 3; ++i) ASSERT_EQ(plane.broadcast(root), root);
        for (int i = 0; i < 3; ++i)
          plane.gather({static_cast<uint8_t>(plane.rank())});
        auto last = plane.gather({static_cast<uint8_t>(plane.rank() + 10)});
        if (plane.rank() == 0) {
          for (int r = 0; r < 5; ++r)
            EXPECT_EQ(last[r], std::vector<uint8_t>{uint8_t(r + 10)});
        }
      });
  for (auto& e : errors) EXPECT_EQ(e, nullptr) << describe(e);
}

bool await_flag(const std::atomic<bool>& flag) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!flag.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return flag.load();
}

// A test reads what has come and returns: rank 0's gather and rank 1's
// broadcast go on while their peer has not begun its part, and end once it
// has.
TEST(Collectives, ATestNeverWaitsForARankThatHasNotBegun) {
  FakeStore store;
  std::atomic<bool> rank1_may_gather{false};
  std::atomic<bool> rank0_may_broadcast{false};
  auto poll_until_done = [](auto&& test) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!test()) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
  };
  auto errors = run_ranks(
      store, 2, all_ranks(2), test_options(), [&](ControlPlane& plane) {
        if (plane.rank() == 0) {
          std::vector<std::vector<uint8_t>> gathered;
          plane.start_gather({10});
          auto began = std::chrono::steady_clock::now();
          for (int i = 0; i < 20; ++i)
            EXPECT_FALSE(plane.test_gather(&gathered));
          EXPECT_LT(std::chrono::steady_clock::now() - began,
                    std::chrono::milliseconds(500));
          rank1_may_gather = true;
          ASSERT_TRUE(
              poll_until_done([&] { return plane.test_gather(&gathered); }));
          EXPECT_EQ(gathered, (std::vector<std::vector<uint8_t>>{{10}, {11}}));
          EXPECT_TRUE(await_flag(rank0_may_broadcast));
          EXPECT_EQ(plane.broadcast({42}), std::vector<uint8_t>{42});
        } else {
          EXPECT_TRUE(await_flag(rank1_may_gather));
          EXPECT_TRUE(plane.gather({11}).empty());
          std::vector<uint8_t> payload;
          plane.start_broadcast({});
          for (int i = 0; i < 20; ++i)
            EXPECT_FALSE(plane.test_broadcast(&payload));
          rank0_may_broadcast = true;
          ASSERT_TRUE(
              poll_until_done([&] { return plane.test_broadcast(&payload); }));
          EXPECT_EQ(payload, std::vector<uint8_t>{42});
        }
      });
  for (auto& e : errors) EXPECT_EQ(e, nullptr) << describe(e);
}

// Rank 1 begins a round alone and calls its neighbour, rank 0, to it,
// which sleeps on the links until then and calls its own neighbours in
// turn; rank 2, idle, hears it without any call of its own (its callback
// fires) and round_called() says so. Nobody is called to the next round.
TEST(Collectives, ARankThatBeganNoRoundIsCalledToIt) {
  FakeStore store;
  std::atomic<bool> called[3] = {};
  std::atomic<int> listening{0};
  auto errors = run_ranks(
      store, 3, all_ranks(3), test_options(), [&](ControlPlane& plane) {
        const int r = plane.rank();
        plane.on_round_called([&called, r] { called[r] = true; });
        ++listening;
        if (r == 0) {
          auto until =
              std::chrono::steady_clock::now() + std::chrono::seconds(10);
          std::vector<int> fds;
          while (!plane.round_called(1) &&
                 std::chrono::steady_clock::now() < until) {
            fds.clear();
            plane.wait_fds(fds);
            std::vector<pollfd> polls;
            for (int fd : fds) polls.push_back({fd, POLLIN, 0});
            poll(polls.data(), polls.size(), 100);
            plane.receive();
          }
          EXPECT_TRUE(plane.round_called(1));
          plane.summon(1);
        } else if (r == 1) {
          while (listening.load() < 3) std::this_thread::yield();
          plane.summon(1);
        } else {
          EXPECT_TRUE(await_flag(called[2])) << "rank 2 was not called";
          EXPECT_TRUE(plane.round_called(1));
        }
        auto gathered = plane.gather({uint8_t(r)});
        EXPECT_EQ(plane.broadcast({9}), std::vector<uint8_t>{9});
        EXPECT_FALSE(plane.round_called(2));
        if (r == 0) {
          EXPECT_EQ(gathered.size(), 3u);
        }
      });
  for (auto& e : errors) EXPECT_EQ(e, nullptr) << describe(e);
}

TEST(Collectives, ASecondControlPlaneIgnoresTheFirstOnesAddresses) {
  // The same bootstrap keys are re-put by each new control plane; a rank
  // may read its parent's old address first and must retry, not fail.
  FakeStore store;
  for (int generation = 0; generation < 3; ++generation) {
    auto errors = run_ranks(
        store, 6, all_ranks(6), test_options(), [&](ControlPlane& plane) {
          // Children start first, and read their parents' old keys.
          std::this_thread::sleep_for(
              std::chrono::milliseconds(20 * (5 - plane.rank())));
          auto all = plane.gather({uint8_t(generation)});
          if (plane.rank() == 0) {
            for (auto& m : all)
              EXPECT_EQ(m, std::vector<uint8_t>{uint8_t(generation)});
          }
          plane.broadcast({});
        });
    for (auto& e : errors) EXPECT_EQ(e, nullptr) << describe(e);
  }
}

TEST(Collectives, ShutdownOfEveryRankIsNotAFailure) {
  // Ranks leave one after another; the ones still up must not see a failure.
  FakeStore store;
  std::atomic<int> callbacks{0};
  std::atomic<int> left{0};
  auto errors = run_ranks(
      store, 6, all_ranks(6), test_options(), [&](ControlPlane& plane) {
        plane.on_failure([&](const PeerFailure&) { callbacks++; });
        plane.gather({});
        plane.broadcast({});
        // Leave in a scrambled order, each rank after the one before it.
        static const int order[] = {3, 0, 5, 1, 4, 2};
        int position = 0;
        while (order[position] != plane.rank()) ++position;
        while (left.load() < position)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        EXPECT_FALSE(plane.failure().has_value())
            << "rank " << plane.rank() << ": " << plane.failure()->reason;
        left++;
      });
  for (auto& e : errors) EXPECT_EQ(e, nullptr) << describe(e);
  EXPECT_EQ(callbacks.load(), 0);
}

}  // namespace
}  // namespace hvd::test
