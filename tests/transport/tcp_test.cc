// What is particular to the tcp transport: its configuration checks, the
// interfaces it listens on, and a listener that has gone.
#include <gtest/gtest.h>
#include <unistd.h>

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

const hvd_transport_api& tcp() { return transport_api("tcp"); }

CaseContext context(hvd_conformance::World& world, const SuiteOptions& o) {
  CaseContext ctx{world, tcp(), o};
  ctx.name = "tcp_test";
  hvd_transport* t = nullptr;
  EXPECT_EQ(tcp().init(world.host(), &t), HVD_OK) << tcp().last_error(nullptr);
  ctx.props.struct_size = sizeof(ctx.props);
  tcp().get_properties(t, &ctx.props);
  tcp().finalize(t);
  return ctx;
}

// Initialises with `settings`; the status and the host's complaints.
hvd_status init_with(std::vector<Setting> settings,
                     std::vector<std::string>* errors) {
  ThreadJob job(1, "tcp", std::move(settings));
  hvd_status status = HVD_OK;
  job.run([&](hvd_conformance::World& world) {
    hvd_transport* t = nullptr;
    status = tcp().init(world.host(), &t);
    if (status == HVD_OK) tcp().finalize(t);
  });
  *errors = job.config_errors(0);
  return status;
}

TEST(TcpTest, UnknownKeyIsAConfigurationError) {
  std::vector<std::string> errors;
  EXPECT_EQ(init_with({setting("stream", 2)}, &errors), HVD_ERR_CONFIG);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("stream: unknown key", 0), 0u) << errors[0];
}

TEST(TcpTest, StreamsMustBeInRange) {
  std::vector<std::string> errors;
  EXPECT_EQ(init_with({setting("streams", 0)}, &errors), HVD_ERR_CONFIG);
  EXPECT_EQ(init_with({setting("streams", 17)}, &errors), HVD_ERR_CONFIG);
  EXPECT_EQ(init_with({setting("streams", 16)}, &errors), HVD_OK);
}

TEST(TcpTest, UnknownInterfaceIsAConfigurationError) {
  std::vector<std::string> errors;
  EXPECT_EQ(init_with({setting("interfaces", "lo,nosuchif0")}, &errors),
            HVD_ERR_CONFIG);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("nosuchif0"), std::string::npos) << errors[0];
}

TEST(TcpTest, InterfacesChooseWhatTheHandleAdvertises) {
  ThreadJob job(2, "tcp", {setting("interfaces", "lo")});
  job.run([&](hvd_conformance::World& world) {
    SuiteOptions o;
    CaseContext ctx = context(world, o);
    Session s(ctx);
    s.connect_all(ConnectOrder::kTogether);
    // Entries follow an 8-byte header: family, reserved, port, address.
    const uint8_t* entry = s.handle(world.rank()).data() + 8;
    EXPECT_EQ(entry[0], 4);
    EXPECT_EQ(entry[4], 127);
    uint8_t in[8] = {}, out[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int peer = 1 - world.rank();
    hvd_conformance::Op* r = s.recv(peer, in, sizeof(in), 1);
    s.wait({r, s.send(peer, out, sizeof(out), 1)});
    EXPECT_EQ(std::memcmp(in, out, sizeof(in)), 0);
  });
}

TEST(TcpTest, ConnectingToAClosedListenerFails) {
  ThreadJob job(1, "tcp", {});
  job.run([&](hvd_conformance::World& world) {
    hvd_transport* t = nullptr;
    ASSERT_EQ(tcp().init(world.host(), &t), HVD_OK);
    uint8_t handle[HVD_TRANSPORT_HANDLE_MAX];
    hvd_listener* l = nullptr;
    ASSERT_EQ(tcp().listen(t, handle, &l), HVD_OK);
    ASSERT_EQ(tcp().listener_close(l), HVD_OK);
    hvd_conn_info info{sizeof(info), 0, 5, 0};
    hvd_conn* c = nullptr;
    ASSERT_EQ(tcp().connect(t, handle, &info, &c), HVD_OK);
    hvd_status st = HVD_AGAIN;
    for (int i = 0; i < 10000 && st == HVD_AGAIN; ++i) {
      st = tcp().conn_test(c);
      if (st == HVD_AGAIN) usleep(1000);
    }
    EXPECT_EQ(st, HVD_ERR_PEER_FAILED);
    EXPECT_NE(std::string(tcp().last_error(t)).find("rank 5"),
              std::string::npos)
        << tcp().last_error(t);
    tcp().conn_close(c);
    tcp().finalize(t);
  });
}

TEST(TcpTest, PendingRequestsFailWhenThePeerClosesTheConnection) {
  ThreadJob job(2, "tcp", {setting("streams", 3)});
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
