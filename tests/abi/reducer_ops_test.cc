// The planner's choice by reduce op: reducers built against the frozen 1.0
// and 1.1 headers (no score_op) are taken to run every op but ADASUM, and
// still load and rank as before; the built-in reducers (1.2) say through
// score_op which ops they run, so ADASUM goes to adasum alone and no other
// op does, whatever the rules name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bootstrap/single_bootstrap.h"
#include "config/config.h"
#include "p2p/team.h"
#include "plugin/loader.h"
#include "runtime/reducers.h"

namespace hvd {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string frozen_dir;  // where the frozen "sum" reducer is
  uint32_t minor;          // the minor it was built against
};

class OlderReducers : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hvd-reducer-ops-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    const std::string file = dir_ + "/horovod.toml";
    // A rule that names "sum" for every size: it goes first where it runs
    // the op, and nowhere else.
    std::ofstream(file) << "[reducer]\nload = [\"sum\", \"ring\", \"adasum\"]\n"
                           "[[allreduce.rules]]\nreducer = \"sum\"\n";
    ConfigLoadOptions options;
    options.path = file;
    options.environment = &environment_;
    options.working_directory = dir_;
    options.system_directory = dir_;
    config_ = Config::load(options);
    loader_ = std::make_unique<PluginLoader>(
        std::vector<std::string>{GetParam().frozen_dir, HVD_BUILT_PLUGINS});
    set_ = std::make_unique<runtime::ReducerSet>(*loader_, config_, bootstrap_);
  }
  void TearDown() override {
    set_.reset();
    fs::remove_all(dir_);
  }

  std::vector<std::string> order(hvd_reduce_op op, uint64_t bytes) {
    std::vector<size_t> indices;
    set_->candidates(HVD_COLL_ALLREDUCE, op, HVD_FLOAT32, team_.view(),
                     HVD_MEM_HOST, bytes, "", indices);
    std::vector<std::string> names;
    for (size_t i : indices) names.push_back(set_->at(i).name());
    return names;
  }

  std::map<std::string, std::string> environment_;
  std::string dir_;
  Config config_;
  SingleBootstrap bootstrap_;
  std::unique_ptr<PluginLoader> loader_;
  std::unique_ptr<runtime::ReducerSet> set_;
  p2p::Team team_{{0, 1}, 0, {0, 0}, 0, 0};
};

TEST_P(OlderReducers, LoadWithoutScoreOp) {
  const hvd_reducer_api& api = set_->at(0).api();
  EXPECT_EQ(set_->at(0).name(), "sum");
  EXPECT_EQ(api.abi_minor, GetParam().minor);
  EXPECT_FALSE(HVD_HAS_FIELD(&api, hvd_reducer_api, score_op));
  const hvd_reducer_api& ring = set_->at(1).api();
  EXPECT_TRUE(HVD_HAS_FIELD(&ring, hvd_reducer_api, score_op));
}

TEST_P(OlderReducers, RunEveryOpButAdasum) {
  // sum scores itself below 64 KiB; the rule puts it first.
  EXPECT_EQ(order(HVD_OP_SUM, 1024), (std::vector<std::string>{"sum", "ring"}));
  EXPECT_EQ(order(HVD_OP_MAX, 1 << 20),
            (std::vector<std::string>{"sum", "ring"}));
  EXPECT_EQ(set_->running(HVD_COLL_ALLREDUCE, HVD_OP_SUM, HVD_FLOAT32,
                          team_.view(), HVD_MEM_HOST),
            (std::vector<std::string>{"sum", "ring"}));
}

TEST_P(OlderReducers, AdasumGoesToAdasumAlone) {
  EXPECT_EQ(order(HVD_OP_ADASUM, 1024), (std::vector<std::string>{"adasum"}));
  EXPECT_EQ(set_->running(HVD_COLL_ALLREDUCE, HVD_OP_ADASUM, HVD_FLOAT64,
                          team_.view(), HVD_MEM_HOST),
            (std::vector<std::string>{"adasum"}));
  // A response that names another reducer does not put it first either.
  std::vector<size_t> indices;
  set_->candidates(HVD_COLL_ALLREDUCE, HVD_OP_ADASUM, HVD_FLOAT32, team_.view(),
                   HVD_MEM_HOST, 1024, "ring", indices);
  ASSERT_EQ(indices.size(), 1u);
  EXPECT_EQ(set_->at(indices[0]).name(), "adasum");
}

INSTANTIATE_TEST_SUITE_P(Frozen, OlderReducers,
                         ::testing::Values(Case{HVD_V1_0_PLUGINS, 0},
                                           Case{HVD_V1_1_PLUGINS, 1}),
                         [](const auto& info) {
                           return "v1_" + std::to_string(info.param.minor);
                         });

}  // namespace
}  // namespace hvd
