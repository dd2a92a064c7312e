#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/pending_op.h"

namespace hvd::runtime {
namespace {

PendingOp named_op() {
  PendingOp op;
  op.request.collective = HVD_COLL_ALLREDUCE;
  op.request.name = "grad";
  return op;
}

void walk(PendingOp& op, const std::vector<OpState>& states) {
  for (OpState s : states) {
    op.move_to(s);
    EXPECT_EQ(op.state(), s);
  }
}

TEST(OpState, AnOpStartsWaitingForItsInputs) {
  EXPECT_EQ(named_op().state(), OpState::kWaitingForInputs);
}

TEST(OpState, EveryPathOfTheLifecycleIsAllowed) {
  using S = OpState;
  const std::vector<std::vector<S>> paths = {
      {S::kNegotiating, S::kQueued, S::kRunning, S::kDone},
      {S::kNegotiating, S::kRunning, S::kDone},  // set 0, no stall check
      {S::kNegotiating, S::kAwaitingCacheBits, S::kQueued, S::kQueued,
       S::kRunning, S::kDone},
      {S::kNegotiating, S::kAwaitingCacheBits, S::kNegotiating, S::kDone},
      {S::kDone},  // its process set was removed before it was ready
  };
  for (const auto& path : paths) {
    PendingOp op = named_op();
    walk(op, path);
  }
}

TEST(OpState, AMoveBackOrOutOfDoneIsABugNamingTheOpAndBothStates) {
  PendingOp running = named_op();
  walk(running, {OpState::kNegotiating, OpState::kRunning});
  try {
    running.move_to(OpState::kNegotiating);
    FAIL() << "running -> negotiating was allowed";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("'grad'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("from running to negotiating"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(running.state(), OpState::kRunning);

  PendingOp done = named_op();
  done.move_to(OpState::kDone);
  EXPECT_THROW(done.move_to(OpState::kDone), Error);
  EXPECT_THROW(done.move_to(OpState::kRunning), Error);

  PendingOp waiting = named_op();
  EXPECT_THROW(waiting.move_to(OpState::kQueued), Error);
  EXPECT_THROW(waiting.move_to(OpState::kAwaitingCacheBits), Error);
  EXPECT_EQ(waiting.state(), OpState::kWaitingForInputs);
}

}  // namespace
}  // namespace hvd::runtime
