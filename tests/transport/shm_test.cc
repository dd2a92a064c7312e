// What is particular to the shm transport: its configuration checks, that it
// leaves nothing in /dev/shm, that it refuses a listener of another host.
#include <glob.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "plugin_path.h"
#include "session.h"
#include "thread_world.h"

namespace hvd_transport_test {
namespace {

using hvd_conformance::CaseContext;
using hvd_conformance::ConnectOrder;
using hvd_conformance::Session;
using hvd_conformance::SuiteOptions;

const hvd_transport_api& shm() { return transport_api("shm"); }

// Names of this test's shared-memory objects.
std::vector<std::string> leftovers() {
  std::string pattern =
      "/dev/shm/hvd-" + std::string(std::getenv("HOROVOD_JOB_ID")) + "-*";
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
  }
  globfree(&g);
  return out;
}

class ShmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string job = "shmtest" + std::to_string(getpid());
    setenv("HOROVOD_JOB_ID", job.c_str(), 1);
  }
};

CaseContext context(hvd_conformance::World& world, const SuiteOptions& o) {
  CaseContext ctx{world, shm(), o};
  ctx.name = "shm_test";
  hvd_transport* t = nullptr;
  EXPECT_EQ(shm().init(world.host(), &t), HVD_OK);
  ctx.props.struct_size = sizeof(ctx.props);
  shm().get_properties(t, &ctx.props);
  shm().finalize(t);
  return ctx;
}

TEST_F(ShmTest, UnknownKeyIsAConfigurationError) {
  ThreadJob job(1, "shm", {setting("ring_sise", 4096)});
  job.run([&](hvd_conformance::World& world) {
    hvd_transport* t = nullptr;
    EXPECT_EQ(shm().init(world.host(), &t), HVD_ERR_CONFIG);
    EXPECT_EQ(t, nullptr);
    EXPECT_NE(std::string(shm().last_error(nullptr)).find("ring_sise"),
              std::string::npos);
  });
  ASSERT_EQ(job.config_errors(0).size(), 1u);
  EXPECT_EQ(job.config_errors(0)[0].rfind("ring_sise: unknown key", 0), 0u)
      << job.config_errors(0)[0];
}

TEST_F(ShmTest, RingSizeMustBeAPowerOfTwo) {
  ThreadJob job(1, "shm", {setting("ring_size", "5000")});
  job.run([&](hvd_conformance::World& world) {
    hvd_transport* t = nullptr;
    EXPECT_EQ(shm().init(world.host(), &t), HVD_ERR_CONFIG);
  });
  ASSERT_EQ(job.config_errors(0).size(), 1u);
  EXPECT_NE(job.config_errors(0)[0].find("power of two"), std::string::npos);
}

TEST_F(ShmTest, PropertiesSayIntraHostAndOneSided) {
  ThreadJob job(1, "shm", {});
  job.run([&](hvd_conformance::World& world) {
    SuiteOptions o;
    CaseContext ctx = context(world, o);
    EXPECT_TRUE(ctx.props.flags & HVD_TRANSPORT_INTRA_HOST);
    EXPECT_TRUE(ctx.props.flags & HVD_TRANSPORT_ONE_SIDED);
    // It runs on the core's threads only: ranks may bind to one core.
    EXPECT_FALSE(ctx.props.flags & HVD_TRANSPORT_OWN_THREADS);
    EXPECT_EQ(ctx.props.tag_bits, 64u);
  });
}

TEST_F(ShmTest, LeavesNothingInDevShm) {
  ThreadJob job(2, "shm", {});
  job.run([&](hvd_conformance::World& world) {
    SuiteOptions o;
    CaseContext ctx = context(world, o);
    {
      Session s(ctx);
      s.connect_all(ConnectOrder::kTogether);
      ctx.barrier();
      // Connected: both ends have the segment, so its name is gone.
      EXPECT_EQ(leftovers(), std::vector<std::string>{});
      ctx.barrier();
      if (world.rank() == 0) {
        void* ptr = nullptr;
        hvd_mr* mr = nullptr;
        ASSERT_EQ(
            shm().mem_alloc(s.transport(), 1000, {HVD_MEM_HOST, 0}, &ptr, &mr),
            HVD_OK);
        // Memory a peer may import has a name until it is freed.
        EXPECT_EQ(leftovers().size(), 1u);
        ASSERT_EQ(shm().mem_free(s.transport(), ptr, mr), HVD_OK);
        EXPECT_EQ(leftovers(), std::vector<std::string>{});
        // Freed at finalize too.
        ASSERT_EQ(
            shm().mem_alloc(s.transport(), 1000, {HVD_MEM_HOST, 0}, &ptr, &mr),
            HVD_OK);
      }
    }
    ctx.barrier();
    EXPECT_EQ(leftovers(), std::vector<std::string>{});
  });
}

TEST_F(ShmTest, RefusesAListenerOnAnotherHost) {
  ThreadJob job(1, "shm", {});
  job.run([&](hvd_conformance::World& world) {
    hvd_transport* t = nullptr;
    ASSERT_EQ(shm().init(world.host(), &t), HVD_OK);
    uint8_t handle[HVD_TRANSPORT_HANDLE_MAX];
    hvd_listener* l = nullptr;
    ASSERT_EQ(shm().listen(t, handle, &l), HVD_OK);
    // The boot id follows magic, version and pid in the handle.
    handle[12] ^= 1;
    hvd_conn_info info{sizeof(info), 0, 0, 0};
    hvd_conn* c = nullptr;
    EXPECT_EQ(shm().connect(t, handle, &info, &c), HVD_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(shm().last_error(t)).find("another host"),
              std::string::npos);
    shm().listener_close(l);
    shm().finalize(t);
  });
}

TEST_F(ShmTest, PendingRequestsFailWhenThePeerClosesTheConnection) {
  ThreadJob job(2, "shm", {});
  job.run([&](hvd_conformance::World& world) {
    SuiteOptions o;
    CaseContext ctx = context(world, o);
    Session s(ctx);
    s.connect_all(ConnectOrder::kTogether);
    int peer = 1 - world.rank();
    if (world.rank() == 0) {
      uint8_t buf[16];
      hvd_conformance::Op* r = s.recv(peer, buf, sizeof(buf), 1);
      ctx.barrier();
      s.wait(r);
      EXPECT_EQ(r->result.status, HVD_ERR_PEER_FAILED);
      EXPECT_EQ(r->result.peer, peer);
    } else {
      ctx.barrier();
      s.close();
    }
  });
}

}  // namespace
}  // namespace hvd_transport_test
