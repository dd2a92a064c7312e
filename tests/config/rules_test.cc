// [[<collective>.rules]]: reducer choice by message size.
#include <gtest/gtest.h>

#include "config_test_support.h"

namespace hvd {
namespace {

using ::testing::HasSubstr;
using testing::load_error;
using testing::load_text;

TEST(ConfigRules, ReadInFileOrderPerCollective) {
  Config config = load_text(
      "[[allreduce.rules]]\n"
      "max_bytes = \"64KiB\"\n"
      "reducer = \"tree\"\n"
      "\n"
      "[[allreduce.rules]]\n"
      "min_bytes = 65536\n"
      "reducer = \"ring\"\n"
      "\n"
      "[[broadcast.rules]]\n"
      "reducer = \"tree\"\n");
  std::vector<ReducerRule> allreduce = config.rules(HVD_COLL_ALLREDUCE);
  ASSERT_EQ(allreduce.size(), 2u);
  EXPECT_EQ(allreduce[0].min_bytes, 0u);
  EXPECT_EQ(allreduce[0].max_bytes, 65536u);
  EXPECT_EQ(allreduce[0].reducer, "tree");
  EXPECT_EQ(allreduce[0].source, config.file() + ":1:1");
  EXPECT_EQ(allreduce[1].min_bytes, 65536u);
  EXPECT_EQ(allreduce[1].max_bytes, UINT64_MAX);
  EXPECT_EQ(allreduce[1].reducer, "ring");
  EXPECT_EQ(allreduce[1].source, config.file() + ":5:1");
  ASSERT_EQ(config.rules(HVD_COLL_BROADCAST).size(), 1u);
  EXPECT_TRUE(config.rules(HVD_COLL_ALLGATHER).empty());
  EXPECT_TRUE(config.rules(HVD_COLL_BARRIER).empty());

  bool listed = false;
  for (const Config::Entry& e : config.entries()) {
    if (e.key == "allreduce.rules[0]") {
      listed = true;
      EXPECT_EQ(e.value, "{ max_bytes = \"64KiB\", reducer = \"tree\" }");
    }
  }
  EXPECT_TRUE(listed);
}

TEST(ConfigRules, InlineArrayForm) {
  Config config = load_text(
      "alltoall.rules = [{ reducer = \"pairwise\", max_bytes = \"1MiB\" }]\n");
  ASSERT_EQ(config.rules(HVD_COLL_ALLTOALL).size(), 1u);
  EXPECT_EQ(config.rules(HVD_COLL_ALLTOALL)[0].reducer, "pairwise");
}

TEST(ConfigRules, Errors) {
  std::string e = load_error("[[allreduce.rules]]\nmax_bytes = \"1MiB\"\n");
  EXPECT_THAT(e, HasSubstr(":1:1: key 'allreduce.rules[0].reducer': a rule "
                           "needs a reducer"));
  e = load_error("[[allreduce.rules]]\nreducer = \"ring\"\nmax_byte = 4\n");
  EXPECT_THAT(e,
              HasSubstr(":3:1: key 'allreduce.rules[0].max_byte': unknown "
                        "key (did you mean 'allreduce.rules[0].max_bytes'?)"));
  e = load_error(
      "[[allgather.rules]]\nreducer = \"ring\"\n"
      "[[allgather.rules]]\nreducer = \"ring\"\n"
      "min_bytes = \"1MiB\"\nmax_bytes = \"1KiB\"\n");
  EXPECT_THAT(e, HasSubstr(":3:1: key 'allgather.rules[1].min_bytes': "
                           "min_bytes (1048576) must be less than max_bytes "
                           "(1024)"));
  e = load_error("[[allreduce.rules]]\nreducer = 1\n");
  EXPECT_THAT(e, HasSubstr(":2:11: key 'allreduce.rules[0].reducer': "
                           "expected a string"));
  e = load_error("[[allreduce.rules]]\nreducer = \"r\"\nmin_bytes = \"x\"\n");
  EXPECT_THAT(e, HasSubstr(":3:13: key 'allreduce.rules[0].min_bytes': "
                           "expected a size"));
  e = load_error("[allreduce]\nrule = 1\n");
  EXPECT_THAT(e, HasSubstr(":2:1: key 'allreduce.rule': unknown key (did you "
                           "mean 'allreduce.rules'?)"));
  e = load_error("[allreduce]\nrules = 1\n");
  EXPECT_THAT(e, HasSubstr("key 'allreduce.rules': expected an array of "
                           "tables"));
  e = load_error("[[allreduc.rules]]\nreducer = \"ring\"\n");
  EXPECT_THAT(e, HasSubstr("key 'allreduc': unknown key (did you mean "
                           "'allreduce'?)"));
}

}  // namespace
}  // namespace hvd
