// Failures: a rank whose sockets close without bye, a rank that stops
// answering, a reported failure, refused and missing ranks at startup. In
// every case every other rank must learn which rank failed, and no call may
// hang.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>

#include "harness.h"
#include "scripted_rank.h"

namespace hvd::test {
namespace {

using namespace std::chrono_literals;

std::vector<int> ranks_except(int size, int skipped) {
  std::vector<int> out;
  for (int r = 0; r < size; ++r)
    if (r != skipped) out.push_back(r);
  return out;
}

// Loops gather + broadcast until the control plane throws; returns the error.
void call_until_failure(ControlPlane& plane) {
  for (int round = 0;; ++round) {
    plane.gather({static_cast<uint8_t>(plane.rank())});
    plane.broadcast({1, 2, 3});
  }
}

void expect_named(const std::exception_ptr& error, int rank,
                  const std::string& reason) {
  ASSERT_NE(error, nullptr);
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_PEER_FAILED) << e.what();
    EXPECT_EQ(e.peer(), rank) << e.what();
    std::string expected =
        "rank " + std::to_string(rank) + " (host scripted-host) failed: ";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos)
        << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an hvd::Error: " << e.what();
  }
}

struct Scenario {
  int size;
  int arity;
  int victim;
};

// The victim relays a few rounds, then closes its sockets (a killed process).
void run_abrupt_close(const Scenario& s) {
  auto options = test_options();
  options.tree_arity = s.arity;
  FakeStore store;
  std::exception_ptr scripted_error;
  std::thread victim([&] {
    try {
      ScriptedRank rank(store, s.victim, s.size, options);
      rank.join();
      for (int i = 0; i < 3; ++i) rank.relay_round();
      rank.close_abruptly();
    } catch (...) {
      scripted_error = std::current_exception();
    }
  });
  auto errors = run_ranks(store, s.size, ranks_except(s.size, s.victim),
                          options, call_until_failure);
  victim.join();
  EXPECT_EQ(scripted_error, nullptr) << describe(scripted_error);
  for (const auto& error : errors) {
    // EOF or reset, whichever the kernel reports first.
    expect_named(error, s.victim, "connection");
  }
}

TEST(AbruptClose, LeafIsNamedOnEveryRank) { run_abrupt_close({8, 2, 7}); }
TEST(AbruptClose, InnerRankIsNamedOnEveryRank) { run_abrupt_close({8, 2, 1}); }
TEST(AbruptClose, ChildOfTheRootIsNamedOnEveryRank) {
  run_abrupt_close({6, 4, 2});
}

// The victim relays a few rounds, then freezes: sockets open, nothing read
// or written.
void run_silence(const Scenario& s) {
  auto options = test_options();
  options.tree_arity = s.arity;
  options.peer_timeout = 300ms;
  options.heartbeat_interval = 50ms;
  FakeStore store;
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  std::thread victim([&] {
    ScriptedRank rank(store, s.victim, s.size, options);
    rank.join();
    for (int i = 0; i < 2; ++i) rank.relay_round();
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return finished; });
  });
  auto start = std::chrono::steady_clock::now();
  auto errors = run_ranks(store, s.size, ranks_except(s.size, s.victim),
                          options, call_until_failure);
  auto took = std::chrono::steady_clock::now() - start;
  {
    std::lock_guard<std::mutex> lock(mutex);
    finished = true;
  }
  done.notify_all();
  victim.join();
  for (const auto& error : errors)
    expect_named(error, s.victim, "no heartbeat for 300 ms");
  EXPECT_LT(took, 15s);  // a generous bound: detection takes about 300 ms
}

TEST(Silence, FrozenLeafIsNamedOnEveryRank) { run_silence({6, 2, 5}); }
TEST(Silence, FrozenInnerRankIsNamedOnEveryRank) { run_silence({7, 2, 1}); }

// Nobody calls: the monitor threads alone must notice and tell everyone.
TEST(IdleRanks, LearnOfAFailureThroughTheCallback) {
  const int size = 7, victim = 3;
  auto options = test_options();
  options.tree_arity = 2;
  FakeStore store;
  std::atomic<bool> joined{false};
  std::thread killer([&] {
    ScriptedRank rank(store, victim, size, options);
    rank.join();
    joined = true;
    std::this_thread::sleep_for(50ms);
    rank.close_abruptly();
  });
  auto errors = run_ranks(
      store, size, ranks_except(size, victim), options,
      [&](ControlPlane& plane) {
        std::mutex mutex;
        std::condition_variable called;
        int calls = 0;
        PeerFailure seen;
        plane.on_failure([&](const PeerFailure& failure) {
          std::lock_guard<std::mutex> lock(mutex);
          ++calls;
          seen = failure;
          called.notify_all();
        });
        {
          std::unique_lock<std::mutex> lock(mutex);
          ASSERT_TRUE(called.wait_for(lock, 10s, [&] { return calls > 0; }))
              << "rank " << plane.rank() << " never heard of the failure";
        }
        EXPECT_EQ(seen.rank, victim);
        ASSERT_TRUE(plane.failure().has_value());
        EXPECT_EQ(plane.failure()->rank, victim);
        // A later call throws at once.
        try {
          plane.gather({});
          ADD_FAILURE() << "gather after a failure returned";
        } catch (const Error& e) {
          EXPECT_EQ(e.peer(), victim);
        }
        std::this_thread::sleep_for(50ms);
        std::lock_guard<std::mutex> lock(mutex);
        EXPECT_EQ(calls, 1);
        // The callback may be replaced by one that captures nothing local.
        plane.on_failure([](const PeerFailure&) {});
      });
  killer.join();
  EXPECT_TRUE(joined);
  for (auto& e : errors) EXPECT_EQ(e, nullptr) << describe(e);
}

TEST(EarlyLeave, IsAFailureForTheRanksStillWaiting) {
  // Rank 2 shuts down normally after one round while the others go on: it
  // said bye, but rank 0 still needs its gather, so everyone must learn.
  FakeStore store;
  auto errors = run_ranks(store, 3, all_ranks(3), test_options(),
                          [](ControlPlane& plane) {
                            plane.gather({});
                            plane.broadcast({});
                            if (plane.rank() == 2) return;
                            call_until_failure(plane);
                          });
  EXPECT_EQ(errors[2], nullptr) << describe(errors[2]);
  for (int r : {0, 1}) {
    ASSERT_NE(errors[r], nullptr);
    try {
      std::rethrow_exception(errors[r]);
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), HVD_ERR_PEER_FAILED) << e.what();
      EXPECT_EQ(e.peer(), 2) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 2 (host host2) failed: shut "
                                           "down while rank 0 still needed it"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(ReportFailure, ReachesEveryRankOnce) {
  const int size = 6;
  FakeStore store;
  std::atomic<int> reported{0};
  auto errors = run_ranks(
      store, size, all_ranks(size), test_options(), [&](ControlPlane& plane) {
        std::atomic<int> calls{0};
        plane.on_failure([&](const PeerFailure& failure) {
          EXPECT_EQ(failure.rank, 2);
          EXPECT_EQ(failure.reason, "transport tcp: connection reset");
          calls++;
        });
        try {
          plane.gather({});
          plane.broadcast({});
          if (plane.rank() == 4) {
            plane.report_failure(2, "transport tcp: connection reset");
            plane.report_failure(5, "a second failure is not reported again");
            reported = 1;
          }
          for (;;) {
            plane.gather({});
            plane.broadcast({});
          }
        } catch (const Error& e) {
          EXPECT_EQ(e.status(), HVD_ERR_PEER_FAILED);
          EXPECT_EQ(e.peer(), 2);
          EXPECT_NE(
              std::string(e.what()).find("rank 2 (host host2) failed: "
                                         "transport tcp: connection reset"),
              std::string::npos)
              << e.what();
        }
        for (int i = 0; i < 1000 && calls.load() == 0; ++i)
          std::this_thread::sleep_for(10ms);
        EXPECT_EQ(calls.load(), 1) << "rank " << plane.rank();
      });
  EXPECT_EQ(reported.load(), 1);
  for (auto& e : errors) EXPECT_EQ(e, nullptr) << describe(e);
}

TEST(Startup, ConnectionFromAnotherJobIsRefused) {
  FakeStore store;
  std::exception_ptr root_error, child_error;
  auto options = test_options();
  options.start_timeout = 1s;
  std::thread root([&] {
    try {
      FakeBootstrap bootstrap(store, 0, 2);
      ControlPlane plane(bootstrap, options);
    } catch (...) {
      root_error = std::current_exception();
    }
  });
  try {
    auto other = options;
    other.job_id = "another-job";
    FakeBootstrap bootstrap(store, 1, 2);
    ControlPlane plane(bootstrap, other);
  } catch (...) {
    child_error = std::current_exception();
  }
  root.join();
  try {
    std::rethrow_exception(child_error);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_MISMATCH) << e.what();
    EXPECT_NE(std::string(e.what()).find("job 'another-job'"),
              std::string::npos)
        << e.what();
  }
  try {
    std::rethrow_exception(root_error);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_TIMEOUT) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank(s) 1 to connect"),
              std::string::npos)
        << e.what();
  }
}

TEST(Startup, MissingRankTimesOutEverywhere) {
  // Rank 2 never starts: its parent (rank 0) times out waiting for it, and
  // rank 1, already connected (and more patient), learns why from rank 0.
  FakeStore store;
  auto options = test_options();
  options.start_timeout = 1s;
  auto patient = test_options();
  std::exception_ptr root_error, child_error;
  std::thread root([&] {
    try {
      FakeBootstrap bootstrap(store, 0, 3);
      ControlPlane plane(bootstrap, options);
    } catch (...) {
      root_error = std::current_exception();
    }
  });
  auto start = std::chrono::steady_clock::now();
  try {
    FakeBootstrap bootstrap(store, 1, 3);
    ControlPlane plane(bootstrap, patient);
  } catch (...) {
    child_error = std::current_exception();
  }
  auto took = std::chrono::steady_clock::now() - start;
  root.join();
  ASSERT_NE(root_error, nullptr);
  ASSERT_NE(child_error, nullptr);
  try {
    std::rethrow_exception(root_error);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_TIMEOUT) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank(s) 2 to connect"),
              std::string::npos)
        << e.what();
  }
  try {
    std::rethrow_exception(child_error);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_PEER_FAILED) << e.what();
    EXPECT_EQ(e.peer(), 0);
    EXPECT_NE(std::string(e.what()).find("rank(s) 2 to connect"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(took, 15s);  // well before its own 20 s start timeout
}

TEST(SingleRank, CollectivesAndReportsWork) {
  FakeStore store;
  auto errors =
      run_ranks(store, 1, {0}, test_options(), [](ControlPlane& plane) {
        auto gathered = plane.gather({7, 8});
        ASSERT_EQ(gathered.size(), 1u);
        EXPECT_EQ(gathered[0], (std::vector<uint8_t>{7, 8}));
        EXPECT_EQ(plane.broadcast({5}), std::vector<uint8_t>{5});
        std::mutex mutex;
        std::condition_variable called;
        bool seen = false;
        plane.on_failure([&](const PeerFailure& f) {
          std::lock_guard<std::mutex> lock(mutex);
          seen = f.rank == 0;
          called.notify_all();
        });
        plane.report_failure(0, "the device fell off the bus");
        std::unique_lock<std::mutex> lock(mutex);
        EXPECT_TRUE(called.wait_for(lock, 10s, [&] { return seen; }));
        EXPECT_THROW(plane.broadcast({}), Error);
        EXPECT_THROW(plane.report_failure(1, "outside the world"), Error);
      });
  EXPECT_EQ(errors[0], nullptr) << describe(errors[0]);
}

}  // namespace
}  // namespace hvd::test
