// gather and broadcast on 1..8 in-process ranks, small and 64 KiB messages,
// several tree widths.
#include <gtest/gtest.h>

#include <atomic>

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

// A chain (tree arity 1): each rank waits for its neighbour in the call.
// A rank joins the gather only once its parent, waiting for it there, has
// done a piece of work that only its `meanwhile` does; it joins the
// broadcast only once its child has, waiting there for it. Without that
// work neither call gets past its first rank. Once a call returns, its
// work stops.
TEST(Collectives, AWaitingRankDoesMeanwhileWhatTheOthersNeedFromIt) {
  constexpr int kSize = 4;
  FakeStore store;
  auto options = test_options();
  options.tree_arity = 1;
  std::atomic<int> gather_work[kSize] = {};
  std::atomic<int> broadcast_work[kSize] = {};
  auto await_work = [](const std::atomic<int>& work) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (work.load() == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return work.load() > 0;
  };
  auto errors = run_ranks(
      store, kSize, all_ranks(kSize), options, [&](ControlPlane& plane) {
        const int r = plane.rank();
        if (r > 0) {
          EXPECT_TRUE(await_work(gather_work[r - 1]))
              << "rank " << r - 1 << " did nothing while it waited to gather";
        }
        plane.gather({uint8_t(r)}, [&] {
          ++gather_work[r];
          return true;
        });
        const int after_gather = gather_work[r].load();
        if (r < kSize - 1) {
          EXPECT_TRUE(await_work(broadcast_work[r + 1]))
              << "rank " << r + 1 << " did nothing while it waited for the "
              << "broadcast";
        }
        EXPECT_EQ(plane.broadcast({7},
                                  [&] {
                                    ++broadcast_work[r];
                                    return false;
                                  }),
                  std::vector<uint8_t>{7});
        EXPECT_EQ(gather_work[r].load(), after_gather);
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
