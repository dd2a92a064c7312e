// The reducer plugins' tables: identity, options and their errors, scores,
// what they decline, and no allocation once warm. Also the harness's own
// sub-teams.
#include <cstring>

#include "support.h"

namespace hvd::test {
namespace {

using TableTest = PluginTest;

TEST_P(TableTest, TableIsCompleteAndVersioned) {
  const hvd_reducer_api& api = p().api();
  EXPECT_EQ(api.kind, HVD_PLUGIN_REDUCER);
  EXPECT_EQ(api.abi_major, (uint32_t)HVD_ABI_VERSION_MAJOR);
  EXPECT_EQ(api.struct_size, sizeof(hvd_reducer_api));
  EXPECT_EQ(GetParam(), api.name);
  for (auto fn : {(void*)api.init, (void*)api.finalize, (void*)api.last_error,
                  (void*)api.score, (void*)api.post, (void*)api.progress,
                  (void*)api.task_free, (void*)api.abort_task}) {
    EXPECT_NE(fn, nullptr);
  }
}

hvd_status init_with(const std::string& plugin_name,
                     std::map<std::string, std::string> config,
                     std::vector<std::string>* errors) {
  const ReducerPlugin& p = plugin(plugin_name);
  TestHost host("reducer." + plugin_name, std::move(config));
  hvd_reducer* r = nullptr;
  const hvd_status st = p.api().init(host.table(), &r);
  if (st == HVD_OK) p.api().finalize(r);
  *errors = host.config_errors();
  return st;
}

TEST(RingOptions, AcceptsSizesAndRejectsBadValues) {
  std::vector<std::string> errors;
  EXPECT_EQ(
      init_with("ring", {{"chunk_bytes", "64KiB"}, {"pipeline_depth", "int:8"}},
                &errors),
      HVD_OK);
  EXPECT_EQ(init_with("ring", {{"chunk_bytes", "int:4096"}}, &errors), HVD_OK);
  for (const char* bad : {"0", "abc", "2GiB", "1.5", "-3"}) {
    EXPECT_EQ(init_with("ring", {{"chunk_bytes", bad}}, &errors),
              HVD_ERR_CONFIG)
        << bad;
    ASSERT_EQ(errors.size(), 1u) << bad;
    EXPECT_EQ(errors[0].rfind("chunk_bytes: ", 0), 0u) << errors[0];
  }
  EXPECT_EQ(init_with("ring", {{"pipeline_depth", "int:0"}}, &errors),
            HVD_ERR_CONFIG);
  EXPECT_EQ(init_with("ring", {{"pipeline_depth", "four"}}, &errors),
            HVD_ERR_CONFIG);
  EXPECT_EQ(init_with("ring", {{"chunk_byte", "1MiB"}}, &errors),
            HVD_ERR_CONFIG);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("did you mean 'chunk_bytes'"), std::string::npos)
      << errors[0];
  EXPECT_STRNE(plugin("ring").api().last_error(nullptr), "");
}

TEST(TreeOptions, AcceptsSizesAndRejectsBadValues) {
  std::vector<std::string> errors;
  EXPECT_EQ(init_with("tree", {{"segment_bytes", "1 MiB"}}, &errors), HVD_OK);
  EXPECT_EQ(init_with("tree", {{"segment_bytes", "1x"}}, &errors),
            HVD_ERR_CONFIG);
  EXPECT_EQ(init_with("tree", {{"chunk_bytes", "1MiB"}}, &errors),
            HVD_ERR_CONFIG);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("unknown key"), std::string::npos) << errors[0];
}

std::vector<hvd_score_range> scores(const std::string& name,
                                    hvd_collective coll, hvd_mem_kind mem) {
  const ReducerPlugin& p = plugin(name);
  TestHost host("reducer." + name);
  hvd_reducer* r = nullptr;
  EXPECT_EQ(p.api().init(host.table(), &r), HVD_OK);
  hvd_team team{};
  team.struct_size = sizeof team;
  team.size = 8;
  std::vector<hvd_score_range> ranges(8);
  size_t count = ranges.size();
  EXPECT_EQ(p.api().score(r, coll, &team, mem, ranges.data(), &count), HVD_OK);
  ranges.resize(count);
  p.api().finalize(r);
  return ranges;
}

int32_t score_at(const std::vector<hvd_score_range>& ranges, uint64_t bytes) {
  int32_t best = 0;
  for (const auto& r : ranges) {
    if (bytes >= r.min_bytes && bytes < r.max_bytes)
      best = std::max(best, r.score);
  }
  return best;
}

TEST(Scores, TreeWinsSmallMessagesRingWinsLargeOnes) {
  for (hvd_collective coll :
       {HVD_COLL_ALLREDUCE, HVD_COLL_ALLGATHER, HVD_COLL_BROADCAST}) {
    const auto ring = scores("ring", coll, HVD_MEM_HOST);
    const auto tree = scores("tree", coll, HVD_MEM_HOST);
    EXPECT_GT(score_at(tree, 1024), score_at(ring, 1024)) << coll;
    EXPECT_GT(score_at(ring, 64 << 20), score_at(tree, 64 << 20)) << coll;
    EXPECT_GT(score_at(tree, 64 << 20), 0) << "tree still works for " << coll;
    EXPECT_GT(score_at(ring, 0), 0) << "ring still works for " << coll;
  }
  EXPECT_GT(score_at(scores("tree", HVD_COLL_BARRIER, HVD_MEM_HOST), 0),
            score_at(scores("ring", HVD_COLL_BARRIER, HVD_MEM_HOST), 0));
  EXPECT_GT(score_at(scores("ring", HVD_COLL_REDUCESCATTER, HVD_MEM_HOST), 1),
            0);
  EXPECT_GT(score_at(scores("ring", HVD_COLL_ALLTOALL, HVD_MEM_HOST), 1), 0);
  // The tree's reducescatter and alltoall are for latency-bound sizes.
  for (hvd_collective coll : {HVD_COLL_REDUCESCATTER, HVD_COLL_ALLTOALL}) {
    const auto ring = scores("ring", coll, HVD_MEM_HOST);
    const auto tree = scores("tree", coll, HVD_MEM_HOST);
    EXPECT_GT(score_at(tree, 64), score_at(ring, 64)) << coll;
    EXPECT_GT(score_at(ring, 1 << 20), score_at(tree, 1 << 20)) << coll;
  }
  EXPECT_TRUE(scores("ring", HVD_COLL_ALLREDUCE, HVD_MEM_CUDA).empty());
  EXPECT_TRUE(scores("tree", HVD_COLL_ALLREDUCE, HVD_MEM_CUDA).empty());
}

TEST(Scores, HalvingDoublingWinsTheMiddleOnPowerOfTwoTeams) {
  const auto ring = scores("ring", HVD_COLL_ALLREDUCE, HVD_MEM_HOST);
  const auto tree = scores("tree", HVD_COLL_ALLREDUCE, HVD_MEM_HOST);
  const auto hd = scores("halving-doubling", HVD_COLL_ALLREDUCE, HVD_MEM_HOST);
  // The middle as measured by horovod-bench --sweep: [256 KiB, 1 MiB).
  EXPECT_GT(score_at(hd, 512 << 10), score_at(ring, 512 << 10));
  EXPECT_GT(score_at(hd, 512 << 10), score_at(tree, 512 << 10));
  EXPECT_GT(score_at(tree, 64), score_at(hd, 64));
  EXPECT_GT(score_at(hd, 64), 0) << "it still works for small messages";
  EXPECT_TRUE(
      scores("halving-doubling", HVD_COLL_ALLGATHER, HVD_MEM_HOST).empty());
}

// score_op (ABI 1.2): which ops each reducer runs, said before any post().
size_t op_ranges(const std::string& name, hvd_collective coll, hvd_reduce_op op,
                 hvd_dtype dtype) {
  const ReducerPlugin& p = plugin(name);
  const hvd_reducer_api& api = p.api();
  EXPECT_TRUE(HVD_HAS_FIELD(&api, hvd_reducer_api, score_op)) << name;
  EXPECT_NE(api.score_op, nullptr) << name;
  TestHost host("reducer." + name);
  hvd_reducer* r = nullptr;
  EXPECT_EQ(api.init(host.table(), &r), HVD_OK);
  hvd_team team{};
  team.struct_size = sizeof team;
  team.size = 4;
  std::vector<hvd_score_range> ranges(8);
  size_t count = ranges.size();
  EXPECT_EQ(api.score_op(r, coll, op, dtype, &team, HVD_MEM_HOST, ranges.data(),
                         &count),
            HVD_OK);
  api.finalize(r);
  return count;
}

TEST(Scores, AdasumAloneRunsOpAdasum) {
  for (const char* name : {"ring", "tree", "halving-doubling"}) {
    for (hvd_collective coll : {HVD_COLL_ALLREDUCE, HVD_COLL_REDUCESCATTER}) {
      if (coll == HVD_COLL_REDUCESCATTER &&
          std::string(name) == "halving-doubling") {
        continue;  // it offers allreduce only
      }
      EXPECT_EQ(op_ranges(name, coll, HVD_OP_ADASUM, HVD_FLOAT32), 0u)
          << name << " " << coll;
      for (hvd_reduce_op op : {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN,
                               HVD_OP_MAX, HVD_OP_PRODUCT}) {
        EXPECT_GT(op_ranges(name, coll, op, HVD_INT32), 0u)
            << name << " " << coll << " op " << op;
      }
    }
  }
  // Collectives that do not reduce ignore the op.
  EXPECT_GT(op_ranges("ring", HVD_COLL_ALLGATHER, HVD_OP_SUM, HVD_INT8), 0u);
  EXPECT_GT(op_ranges("adasum", HVD_COLL_ALLREDUCE, HVD_OP_ADASUM, HVD_FLOAT64),
            0u);
  for (hvd_reduce_op op : {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MAX}) {
    EXPECT_EQ(op_ranges("adasum", HVD_COLL_ALLREDUCE, op, HVD_FLOAT32), 0u)
        << op;
  }
  EXPECT_EQ(op_ranges("adasum", HVD_COLL_ALLGATHER, HVD_OP_SUM, HVD_FLOAT32),
            0u);
  // score() (what a core before 1.2 asks) keeps its old meaning: adasum
  // answers for the op it runs.
  EXPECT_FALSE(scores("adasum", HVD_COLL_ALLREDUCE, HVD_MEM_HOST).empty());
}

// post() on one rank alone, for what it declines.
hvd_status post_alone(const std::string& name, hvd_coll_args a,
                      std::string* message) {
  const RankReducers& red = reducers(name, 1);
  Fabric fabric(1);
  hvd_p2p_s p2p(&fabric, 1, {0}, 0, Chaos{});
  hvd_task* task = nullptr;
  const hvd_status st = red.api().post(red[0], &a, p2p_api(), &p2p, &task);
  *message = red.api().last_error(red[0]);
  if (st == HVD_OK) {
    hvd_completion c{};
    while (red.api().progress(task, &c) == HVD_AGAIN) {
    }
    red.api().task_free(task);
  }
  return st;
}

TEST_P(TableTest, DeclinesWhatItDoesNotDo) {
  float x[4] = {1, 2, 3, 4};
  std::string message;
  hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, HVD_FLOAT32);
  a.send = a.recv = x;
  a.count = 4;
  a.device = hvd_device{HVD_MEM_CUDA, 0};
  EXPECT_EQ(post_alone(GetParam(), a, &message), HVD_ERR_UNSUPPORTED);
  a.device = hvd_device{HVD_MEM_HOST, 0};
  a.op = HVD_OP_ADASUM;
  EXPECT_EQ(post_alone(GetParam(), a, &message), HVD_ERR_UNSUPPORTED);
  EXPECT_NE(message.find("ADASUM"), std::string::npos) << message;
  a.op = HVD_OP_SUM;
  a.dtype = 99;
  EXPECT_EQ(post_alone(GetParam(), a, &message), HVD_ERR_INVALID_ARGUMENT);
  a.dtype = HVD_FLOAT32;
  a.collective = HVD_COLL_JOIN;
  EXPECT_EQ(post_alone(GetParam(), a, &message), HVD_ERR_UNSUPPORTED);
  a.collective = HVD_COLL_BROADCAST;
  a.root = 3;
  EXPECT_EQ(post_alone(GetParam(), a, &message), HVD_ERR_INVALID_ARGUMENT);
  if (!offered(p(), HVD_COLL_REDUCESCATTER)) {
    a = base_args(HVD_COLL_REDUCESCATTER, HVD_FLOAT32);
    size_t counts[1] = {4}, displs[1] = {0};
    a.send = a.recv = x;
    a.count = 4;
    a.counts = counts;
    a.displs = displs;
    EXPECT_EQ(post_alone(GetParam(), a, &message), HVD_ERR_UNSUPPORTED);
  }
}

// native on a team whose transport has no native collectives (every team
// over tcp): it declines with the reason, so the planner takes the next.
TEST(NativeReducer, DeclinesATeamWithoutNativeCollectives) {
  float x[4] = {1, 2, 3, 4};
  hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, HVD_FLOAT32);
  a.send = a.recv = x;
  a.count = 4;
  std::string message;
  EXPECT_EQ(post_alone("native", a, &message), HVD_ERR_UNSUPPORTED);
  EXPECT_NE(message.find("no transport with native collectives"),
            std::string::npos)
      << message;
}

// Scratch comes from a pool kept across tasks: the second run of the same
// collective allocates nothing.
TEST_P(TableTest, WarmReducerAllocatesNothing) {
  const int32_t n = 4;
  const RankReducers& red = reducers(GetParam(), n, {});
  std::vector<Bytes> data(n, Bytes(4096 * 4, 1));
  auto args = [&](int32_t r) {
    hvd_coll_args a = base_args(HVD_COLL_ALLREDUCE, HVD_INT32);
    a.send = a.recv = data[r].data();  // in place: needs scratch
    a.count = 4096;
    return a;
  };
  run_collective(red, all_ranks(n), n, args);
  std::vector<int64_t> before(n);
  for (int32_t r = 0; r < n; ++r) before[r] = red.host(r).allocations();
  for (int i = 0; i < 3; ++i) run_collective(red, all_ranks(n), n, args);
  for (int32_t r = 0; r < n; ++r) {
    EXPECT_GT(before[r], 0) << "rank " << r << " took scratch once";
    EXPECT_EQ(red.host(r).allocations(), before[r]) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Reducers, TableTest,
                         ::testing::Values("ring", "tree", "halving-doubling"),
                         param_name);

TEST(Harness, SubteamsTalkOnTheirOwnChannel) {
  Fabric fabric(3);
  std::vector<std::unique_ptr<hvd_p2p_s>> ranks;
  for (int32_t r = 0; r < 3; ++r) {
    ranks.push_back(std::make_unique<hvd_p2p_s>(
        &fabric, 1, std::vector<int32_t>{0, 1, 2}, r, Chaos{}));
  }
  const hvd_p2p_api* api = p2p_api();
  const int32_t members[] = {2, 0};  // world 2 is sub-rank 0
  hvd_p2p* sub0 = nullptr;
  hvd_p2p* sub2 = nullptr;
  ASSERT_EQ(api->subteam(ranks[0].get(), members, 2, &sub0), HVD_OK);
  ASSERT_EQ(api->subteam(ranks[2].get(), members, 2, &sub2), HVD_OK);
  hvd_p2p* outsider = nullptr;
  EXPECT_EQ(api->subteam(ranks[1].get(), members, 2, &outsider),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api->team(sub0)->rank, 1);
  EXPECT_EQ(api->team(sub2)->rank, 0);
  int value = 42, got = 0, stray = 0;
  hvd_p2p_request *s = nullptr, *r = nullptr, *on_parent = nullptr;
  // A receive with the same peer and step on the parent team must not match.
  ASSERT_EQ(api->irecv(ranks[0].get(), 2, &stray, sizeof stray, 7, &on_parent),
            HVD_OK);
  ASSERT_EQ(api->isend(sub2, 1, &value, sizeof value, 7, &s), HVD_OK);
  ASSERT_EQ(api->irecv(sub0, 0, &got, sizeof got, 7, &r), HVD_OK);
  hvd_completion c{};
  int32_t done = 0;
  ASSERT_EQ(api->test(sub0, r, &done, &c), HVD_OK);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(got, 42);
  EXPECT_EQ(stray, 0);
  ASSERT_EQ(api->test(sub2, s, &done, &c), HVD_OK);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(api->native(sub0, nullptr), nullptr);
  EXPECT_EQ(api->peer_buffer, nullptr);
  ASSERT_EQ(api->test(ranks[0].get(), on_parent, &done, &c), HVD_OK);
  EXPECT_EQ(done, 0);  // still pending: freed with the fabric
}

}  // namespace
}  // namespace hvd::test
