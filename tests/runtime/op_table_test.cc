#include "runtime/op_table.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "common/error.h"

namespace hvd::runtime {
namespace {

std::unique_ptr<PendingOp> op_named(
    const std::string& name, hvd_collective collective = HVD_COLL_ALLREDUCE) {
  auto op = std::make_unique<PendingOp>();
  op->request.collective = collective;
  op->request.name = name;
  return op;
}

std::string message_of(const std::function<void()>& fn, hvd_status status) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "nothing was thrown";
  return "";
}

TEST(OpTable, OwnsEachOpUntilItIsReleased) {
  OpTable table(3);
  PendingOp* grad = table.insert(op_named("grad"));
  PendingOp* bias = table.insert(op_named("bias"));
  EXPECT_EQ(grad->table, &table);
  EXPECT_EQ(table.size(), 2u);

  std::unique_ptr<PendingOp> owned = table.release(*grad);
  EXPECT_EQ(owned.get(), grad);
  EXPECT_EQ(table.size(), 1u);
  ASSERT_EQ(table.ops().size(), 1u);
  EXPECT_EQ(table.ops()[0], bias);
  table.release(*bias);
  EXPECT_TRUE(table.empty());
}

TEST(OpTable, RefusesANameInFlightAndTakesItOnceReleased) {
  OpTable table(3);
  PendingOp* first = table.insert(op_named("grad"));
  std::string m = message_of([&] { table.insert(op_named("grad")); },
                             HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(m.find("allreduce 'grad'"), std::string::npos) << m;
  EXPECT_NE(m.find("already in flight on process set 3"), std::string::npos)
      << m;
  EXPECT_EQ(table.size(), 1u);
  table.release(*first);
  PendingOp* again = table.insert(op_named("grad"));
  EXPECT_EQ(again->table, &table);
}

TEST(OpTable, HoldsOneJoinWhateverItsName) {
  OpTable table(0);
  PendingOp* join = table.insert(op_named("join.0", HVD_COLL_JOIN));
  std::string m =
      message_of([&] { table.insert(op_named("join.1", HVD_COLL_JOIN)); },
                 HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(m.find("a join is already in flight on process set 0"),
            std::string::npos)
      << m;
  // Tensors of any name, "join" too, are held beside it.
  PendingOp* named_join = table.insert(op_named("join"));
  table.insert(op_named("join.1"));
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.ops().size(), 3u);
  std::unique_ptr<PendingOp> released = table.release(*join);
  EXPECT_THROW(table.release(*released), Error);
  EXPECT_EQ(table.release(*named_join).get(), named_join);
  EXPECT_EQ(table.size(), 1u);
}

TEST(OpTable, ASecondCompletionIsABugNamingTheOp) {
  OpTable table(2);
  PendingOp* grad = table.insert(op_named("grad"));
  std::unique_ptr<PendingOp> owned = table.release(*grad);
  std::string m = message_of([&] { table.release(*owned); }, HVD_ERR_INTERNAL);
  EXPECT_NE(m.find("allreduce 'grad': completed twice"), std::string::npos)
      << m;
  EXPECT_NE(m.find("process set 2"), std::string::npos) << m;

  // Nor may it release a newer op of the same name.
  PendingOp* newer = table.insert(op_named("grad"));
  EXPECT_THROW(table.release(*owned), Error);
  EXPECT_EQ(table.ops()[0], newer);
}

}  // namespace
}  // namespace hvd::runtime
