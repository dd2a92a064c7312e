// The nccl transport where no GPU is needed: it loads, says plainly that
// there is no CUDA device (here), checks its table before that, declines
// what NCCL cannot do, and its members agree on a unique id through the
// bootstrap store.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "horovod/transport.h"
#include "nccl/unique_id.h"
#include "plugin_path.h"
#include "thread_world.h"

namespace hvd_transport_test {
namespace {

const hvd_transport_api& nccl_api() {
  static const hvd_transport_api& api = transport_api("nccl");
  return api;
}

template <typename T>
const T* find_ext(int32_t type) {
  return find_extension<T>(nccl_api(), type);
}

bool has_gpu() {
  auto* info = find_ext<hvd_plugin_info>(HVD_EXT_PLUGIN_INFO);
  return info != nullptr &&
         std::string(info->describe()).find("no CUDA device") ==
             std::string::npos;
}

TEST(NcclPlugin, LoadsWithItsExtensions) {
  const hvd_transport_api& api = nccl_api();
  EXPECT_STREQ(api.name, "nccl");
  EXPECT_EQ(api.kind, HVD_PLUGIN_TRANSPORT);
  auto* coll =
      find_ext<hvd_transport_collectives>(HVD_EXT_TRANSPORT_COLLECTIVES);
  ASSERT_NE(coll, nullptr);
  for (auto fn : {reinterpret_cast<const void*>(coll->allreduce),
                  reinterpret_cast<const void*>(coll->allgatherv),
                  reinterpret_cast<const void*>(coll->broadcast),
                  reinterpret_cast<const void*>(coll->reducescatter),
                  reinterpret_cast<const void*>(coll->alltoallv),
                  reinterpret_cast<const void*>(coll->comm_abort)}) {
    EXPECT_NE(fn, nullptr);
  }
  auto* info = find_ext<hvd_plugin_info>(HVD_EXT_PLUGIN_INFO);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(std::string(info->describe()).rfind("NCCL 2.", 0), 0u)
      << info->describe();
}

TEST(NcclPlugin, SaysThereIsNoDevice) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present";
  ThreadJob job(1, "nccl", {});
  job.run([](hvd_conformance::World& w) {
    hvd_transport* t = nullptr;
    EXPECT_EQ(nccl_api().init(w.host(), &t), HVD_ERR_UNSUPPORTED);
    std::string why = nccl_api().last_error(nullptr);
    EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
    EXPECT_NE(why.find("NCCL 2."), std::string::npos) << why;
  });
  auto* info = find_ext<hvd_plugin_info>(HVD_EXT_PLUGIN_INFO);
  EXPECT_NE(std::string(info->describe()).find("no CUDA device"),
            std::string::npos);
}

TEST(NcclPlugin, ChecksItsTableFirst) {
  for (const Setting& bad : {setting("timeout", "later"), setting("device", -2),
                             setting("rings", 4)}) {
    ThreadJob job(1, "nccl", {bad});
    job.run([&](hvd_conformance::World& w) {
      hvd_transport* t = nullptr;
      EXPECT_EQ(nccl_api().init(w.host(), &t), HVD_ERR_CONFIG) << bad.key;
      EXPECT_NE(std::string(nccl_api().last_error(nullptr)).find(bad.key),
                std::string::npos)
          << nccl_api().last_error(nullptr);
    });
  }
}

TEST(NcclPlugin, SupportsCudaMemoryOnly) {
  auto* coll =
      find_ext<hvd_transport_collectives>(HVD_EXT_TRANSPORT_COLLECTIVES);
  ASSERT_NE(coll, nullptr);
  EXPECT_EQ(coll->supports(nullptr, HVD_COLL_ALLREDUCE, HVD_FLOAT32, HVD_OP_SUM,
                           HVD_MEM_CUDA),
            1);
  EXPECT_EQ(coll->supports(nullptr, HVD_COLL_ALLREDUCE, HVD_BFLOAT16,
                           HVD_OP_MAX, HVD_MEM_CUDA),
            1);
  EXPECT_EQ(coll->supports(nullptr, HVD_COLL_ALLREDUCE, HVD_FLOAT32, HVD_OP_SUM,
                           HVD_MEM_HOST),
            0);
  EXPECT_EQ(coll->supports(nullptr, HVD_COLL_ALLREDUCE, HVD_BOOL, HVD_OP_SUM,
                           HVD_MEM_CUDA),
            0);
  EXPECT_EQ(coll->supports(nullptr, HVD_COLL_ALLREDUCE, HVD_FLOAT32,
                           HVD_OP_ADASUM, HVD_MEM_CUDA),
            0);
  EXPECT_EQ(coll->supports(nullptr, HVD_COLL_ALLGATHER, HVD_INT16, HVD_OP_SUM,
                           HVD_MEM_CUDA),
            1);
  EXPECT_EQ(coll->supports(nullptr, HVD_COLL_REDUCESCATTER, HVD_FLOAT16,
                           HVD_OP_SUM, HVD_MEM_CUDA),
            1);
}

TEST(NcclPlugin, PointToPointIsDeclinedWithAReason) {
  uint8_t handle[HVD_TRANSPORT_HANDLE_MAX] = {};
  hvd_listener* l = nullptr;
  EXPECT_EQ(nccl_api().listen(nullptr, handle, &l), HVD_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(nccl_api().last_error(nullptr)).find("collectives"),
            std::string::npos);
}

// Rank 0 publishes the id; the others poll without blocking until it is
// there, and all end with the same bytes.
TEST(NcclUniqueId, TheTeamAgreesThroughTheStore) {
  ThreadJob job(3, "nccl", {});
  std::vector<std::vector<char>> got(3);
  job.run([&](hvd_conformance::World& w) {
    const std::string key = hvd_nccl::UniqueIdExchange::key_for(0, 7, 1);
    int generated = 0;
    hvd_nccl::UniqueIdExchange ex(w.host(), w.rank(), 0, key, [&] {
      ++generated;
      return std::vector<char>(hvd_nccl::kUniqueIdBytes, 'x');
    });
    if (w.rank() != 0) {
      // Nothing is published before rank 0 has been through the barrier.
      EXPECT_EQ(ex.step(), HVD_AGAIN);
    }
    w.barrier("before", std::chrono::seconds(10));
    if (w.rank() == 0) {
      EXPECT_EQ(ex.step(), HVD_OK);
    }
    w.barrier("published", std::chrono::seconds(10));
    EXPECT_EQ(ex.step(), HVD_OK);
    EXPECT_EQ(ex.step(), HVD_OK);  // and stays known
    got[w.rank()] = ex.id();
    EXPECT_EQ(generated, w.rank() == 0 ? 1 : 0);
  });
  EXPECT_EQ(got[0].size(), hvd_nccl::kUniqueIdBytes);
  EXPECT_EQ(got[1], got[0]);
  EXPECT_EQ(got[2], got[0]);
}

TEST(NcclUniqueId, KeysSeparateSetsEpochsAndGenerations) {
  using hvd_nccl::UniqueIdExchange;
  EXPECT_EQ(UniqueIdExchange::key_for(0, 0, 0), "nccl.0.0.0");
  EXPECT_NE(UniqueIdExchange::key_for(1, 0, 0),
            UniqueIdExchange::key_for(0, 0, 0));
  EXPECT_NE(UniqueIdExchange::key_for(0, 1, 0),
            UniqueIdExchange::key_for(0, 0, 0));
  EXPECT_NE(UniqueIdExchange::key_for(0, 0, 1),
            UniqueIdExchange::key_for(0, 0, 0));
}

}  // namespace
}  // namespace hvd_transport_test
