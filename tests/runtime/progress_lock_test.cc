#include "runtime/progress_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <type_traits>

namespace hvd::runtime {
namespace {

// Only taking the lock makes the proof that the cycle's methods require.
static_assert(!std::is_default_constructible_v<ProgressLock::Held>);
static_assert(!std::is_copy_constructible_v<ProgressLock::Held>);

TEST(ProgressLock, OneHolderAtATime) {
  ProgressLock lock;
  std::optional<ProgressLock::Held> first = lock.try_take();
  ASSERT_TRUE(first);
  EXPECT_FALSE(lock.try_take());
  ProgressLock::Held moved = std::move(*first);
  first.reset();  // a moved-from proof releases nothing
  EXPECT_FALSE(lock.try_take());
  { ProgressLock::Held gone = std::move(moved); }
  EXPECT_TRUE(lock.try_take());
}

TEST(ProgressLock, ReleaseWhileLetsAnotherThreadHoldIt) {
  ProgressLock lock;
  ProgressLock::Held held = lock.take();
  std::atomic<bool> other_held{false};
  held.release_while([&] {
    std::thread other([&] { other_held = lock.try_take().has_value(); });
    other.join();
  });
  EXPECT_TRUE(other_held);
  EXPECT_FALSE(lock.try_take());  // taken back
}

TEST(ProgressLock, TakeWaitsForTheHolder) {
  ProgressLock lock;
  std::optional<ProgressLock::Held> held = lock.take();
  std::atomic<bool> taken{false};
  std::thread waiter([&] {
    ProgressLock::Held mine = lock.take();
    taken = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(taken);
  held.reset();
  waiter.join();
  EXPECT_TRUE(taken);
}

}  // namespace
}  // namespace hvd::runtime
