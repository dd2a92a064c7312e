// What is particular to the tcp transport: its configuration checks, the
// interfaces it listens on, a listener that has gone, messages striped over
// several streams, a peer that closes while parts are on their way, the
// congestion control it picks, and the pool of buffers for messages that
// arrive before their receive.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "cases.h"
#include "pattern.h"
#include "plugin_path.h"
#include "session.h"
#include "tcp/addresses.h"
#include "tcp/buffer_pool.h"
#include "tcp/protocol.h"
#include "thread_world.h"

namespace hvd_transport_test {
namespace {

using hvd_conformance::Buffer;
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

// ---- a peer that closes ------------------------------------------------

void write_all(int fd, const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    ASSERT_GT(n, 0) << std::strerror(errno);
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

// The connecting end of a tcp connection, written by hand so the test
// decides when each stream carries what and when it ends.
class RawPeer {
 public:
  RawPeer(const Bytes& handle, int streams, int32_t rank, uint64_t epoch) {
    hvd_tcp::Handle h{};
    std::memcpy(&h, handle.data(), std::min(handle.size(), sizeof(h)));
    EXPECT_EQ(h.magic, hvd_tcp::kHandleMagic);
    sockaddr_in to{};
    for (uint16_t i = 0; i < h.count; ++i) {
      if (h.entries[i].family != 4) continue;
      to.sin_family = AF_INET;
      to.sin_port = htons(h.entries[i].port);
      std::memcpy(&to.sin_addr, h.entries[i].address, 4);
      break;
    }
    for (int i = 0; i < streams; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0)
          << std::strerror(errno);
      hvd_tcp::Hello hello{};
      hello.magic = hvd_tcp::kHelloMagic;
      hello.version = hvd_tcp::kProtocolVersion;
      hello.stream_index = static_cast<uint16_t>(i);
      hello.stream_count = static_cast<uint16_t>(streams);
      hello.rank = rank;
      hello.expected_rank = -1;
      hello.epoch = epoch;
      hello.conn_key = 0x5eed;
      write_all(fd, &hello, sizeof(hello));
      fds_.push_back(fd);
    }
    // The acceptor answers once every stream has arrived.
    for (int fd : fds_) {
      hvd_tcp::Ack ack{};
      EXPECT_EQ(::recv(fd, &ack, sizeof(ack), MSG_WAITALL),
                static_cast<ssize_t>(sizeof(ack)));
      EXPECT_EQ(ack.status, HVD_OK);
    }
  }
  ~RawPeer() {
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }
  void send(int stream, const void* data, size_t bytes) {
    write_all(fds_[stream], data, bytes);
  }
  void end(int stream) {
    ::close(fds_[stream]);
    fds_[stream] = -1;
  }

 private:
  std::vector<int> fds_;
};

// The peer sends a message in two parts, then closes stream 0 (where the
// headers travel) before the second part has left: the message still
// arrives whole. Only once nothing more can come does the connection fail,
// for the receive that nothing was sent to.
TEST(TcpTest, PartsSentBeforeThePeerClosedArriveWhole) {
  ThreadJob job(2, "tcp", {});
  job.run([&](hvd_conformance::World& world) {
    SuiteOptions o;
    CaseContext ctx = context(world, o);
    const uint64_t epoch = world.host()->world->epoch;
    constexpr uint64_t kLength = 3 * 4096 + 5;
    const uint64_t first = hvd_tcp::part_bytes(kLength, 2);
    Buffer message(kLength);
    hvd_conformance::fill(message.data(), kLength, 11);
    if (world.rank() == 1) {
      RawPeer peer(ctx.allgather({})[0], 2, 1, epoch);
      hvd_tcp::FrameHeader frame{5, kLength, 2, 0};
      peer.send(0, &frame, sizeof(frame));
      peer.send(0, message.data(), first);
      peer.end(0);
      ctx.barrier();  // rank 0 has seen stream 0 end
      hvd_tcp::PartHeader part{0, 1, kLength - first};
      peer.send(1, &part, sizeof(part));
      peer.send(1, message.data() + first, kLength - first);
      peer.end(1);
      ctx.barrier();
      return;
    }
    const hvd_transport_api& api = tcp();
    hvd_transport* t = nullptr;
    ASSERT_EQ(api.init(world.host(), &t), HVD_OK);
    uint8_t handle[HVD_TRANSPORT_HANDLE_MAX] = {};
    hvd_listener* listener = nullptr;
    ASSERT_EQ(api.listen(t, handle, &listener), HVD_OK);
    ctx.allgather(Bytes(handle, handle + ctx.props.handle_bytes));
    hvd_conn_info info{sizeof(info), 0, -1, epoch};
    hvd_conn* c = nullptr;
    while (api.accept(listener, &info, &c) == HVD_AGAIN) {
    }
    ASSERT_NE(c, nullptr) << api.last_error(t);
    hvd_status up;
    while ((up = api.conn_test(c)) == HVD_AGAIN) {
    }
    ASSERT_EQ(up, HVD_OK) << api.last_error(t);
    Buffer got(kLength);
    uint8_t spare[8];
    hvd_request* whole = nullptr;
    hvd_request* never = nullptr;
    ASSERT_EQ(api.irecv(c, got.data(), kLength, 5, nullptr, &whole), HVD_OK);
    ASSERT_EQ(api.irecv(c, spare, sizeof(spare), 6, nullptr, &never), HVD_OK);
    auto finish = [&](hvd_request* r) {
      hvd_completion out{};
      out.struct_size = sizeof(out);
      for (int32_t done = 0; !done;) {
        EXPECT_EQ(api.test(r, &done, &out), HVD_OK) << api.last_error(t);
      }
      return out;
    };
    // Long enough for stream 0's end to be read.
    auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < until) {
      hvd_completion out{};
      out.struct_size = sizeof(out);
      int32_t done = 0;
      ASSERT_EQ(api.test(whole, &done, &out), HVD_OK);
      ASSERT_EQ(done, 0) << "ended with " << out.status << ": "
                         << api.last_error(t);
    }
    ctx.barrier();
    hvd_completion out = finish(whole);
    EXPECT_EQ(out.status, HVD_OK) << api.last_error(t);
    EXPECT_EQ(out.bytes, kLength);
    EXPECT_EQ(hvd_conformance::verify(got.data(), kLength, 11), -1);
    out = finish(never);
    EXPECT_EQ(out.status, HVD_ERR_PEER_FAILED);
    EXPECT_EQ(out.peer, 1);
    ctx.barrier();
    api.conn_close(c);
    api.listener_close(listener);
    api.finalize(t);
  });
}

// ---- congestion control -------------------------------------------------

// The congestion control algorithm of every connected TCP socket of this
// process (the ranks of a ThreadJob are its threads).
std::vector<std::string> connected_congestion_controls() {
  std::vector<std::string> out;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    int fd = std::atoi(e->d_name);
    if (fd <= 2 || fd == dirfd(dir)) continue;
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    int type = 0;
    socklen_t type_len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 ||
        type != SOCK_STREAM ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
      continue;
    }
    char name[16] = {};
    socklen_t name_len = sizeof(name);
    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &name_len) == 0) {
      out.emplace_back(name, strnlen(name, name_len));
    }
  }
  closedir(dir);
  return out;
}

std::string system_congestion_control() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  in >> name;
  return name;
}

// Connects 2 ranks with `settings`; the algorithms of the connected sockets
// while they are up.
std::vector<std::string> congestion_controls_with(
    std::vector<Setting> settings) {
  std::vector<std::string> seen;
  ThreadJob job(2, "tcp", std::move(settings));
  job.run([&](hvd_conformance::World& world) {
    SuiteOptions o;
    CaseContext ctx = context(world, o);
    Session s(ctx);
    s.connect_all(ConnectOrder::kTogether);
    ctx.barrier();
    if (world.rank() == 0) seen = connected_congestion_controls();
    ctx.barrier();
  });
  return seen;
}

TEST(TcpTest, ConnectionsWithinTheHostUseRenoByDefault) {
  std::vector<std::string> seen =
      congestion_controls_with({setting("streams", 3)});
  EXPECT_EQ(seen.size(), 6u);  // 3 streams, both ends
  for (const std::string& name : seen) EXPECT_EQ(name, "reno");
}

TEST(TcpTest, CongestionControlSystemLeavesTheKernelDefault) {
  std::vector<std::string> seen = congestion_controls_with(
      {setting("streams", 2), setting("congestion_control", "system")});
  EXPECT_EQ(seen.size(), 4u);
  for (const std::string& name : seen) {
    EXPECT_EQ(name, system_congestion_control());
  }
}

TEST(TcpTest, UnknownCongestionControlIsAConfigurationError) {
  std::vector<std::string> errors;
  EXPECT_EQ(init_with({setting("congestion_control", "nosuchcc")}, &errors),
            HVD_ERR_CONFIG);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("congestion_control: ", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("nosuchcc"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("reno"), std::string::npos) << errors[0];
  EXPECT_EQ(init_with({setting("congestion_control", "reno")}, &errors),
            HVD_OK);
}

// ---- striping ------------------------------------------------------------

// Around the edges of the parts of a split message (whole 4 KiB pages, the
// last part shorter, fewer parts than streams for the small ones), odd
// sizes, and a few MiB.
const size_t kStripedSizes[] = {1,
                                4095,
                                4096,
                                4097,
                                8193,
                                12287,
                                65537,
                                (1u << 20) + 3,
                                16383,
                                0,
                                (3u << 20) + 4095};

// Every rank sends every size to every peer and checks what it gets; in
// even rounds the receives are posted first, in odd rounds the messages
// arrive before their receives (and are kept in the transport's buffers).
void exchange_every_size(hvd_conformance::World& world, int rounds) {
  SuiteOptions o;
  CaseContext ctx = context(world, o);
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  constexpr size_t kCount = std::size(kStripedSizes);
  for (int round = 0; round < rounds; ++round) {
    std::vector<Buffer> out, in;
    std::vector<hvd_conformance::Op*> ops;
    for (size_t i = 0; i < kCount; ++i) {
      out.emplace_back(kStripedSizes[i] + 1);
      hvd_conformance::fill(out.back().data(), kStripedSizes[i],
                            hvd_conformance::seed_of(s.rank(), i, round, 7));
    }
    auto post_recvs = [&] {
      for (int p : s.peers()) {
        for (size_t i = 0; i < kCount; ++i) {
          in.emplace_back(kStripedSizes[i] + 1);
          ops.push_back(
              s.recv(p, in.back().data(), kStripedSizes[i],
                     hvd_conformance::spread_tag(ctx, 100 * round + i)));
        }
      }
    };
    auto post_sends = [&] {
      for (size_t i = 0; i < kCount; ++i) {
        for (int p : s.peers()) {
          ops.push_back(
              s.send(p, out[i].data(), kStripedSizes[i],
                     hvd_conformance::spread_tag(ctx, 100 * round + i)));
        }
      }
    };
    if (round % 2 == 0) {
      post_recvs();
      post_sends();
    } else {
      post_sends();
      ctx.barrier();
      post_recvs();
    }
    s.wait(ops);
    for (hvd_conformance::Op* op : ops) {
      EXPECT_EQ(op->result.status, HVD_OK) << op->what;
    }
    size_t at = 0;
    for (int p : s.peers()) {
      for (size_t i = 0; i < kCount; ++i, ++at) {
        EXPECT_EQ(
            hvd_conformance::verify(in[at].data(), kStripedSizes[i],
                                    hvd_conformance::seed_of(p, i, round, 7)),
            -1)
            << "round " << round << ": " << kStripedSizes[i]
            << " bytes from rank " << p;
      }
    }
    ctx.barrier();
  }
}

TEST(TcpTest, StripedMessagesArriveWholeAtEverySize) {
  for (int streams : {2, 3, 4, 16}) {
    SCOPED_TRACE("streams = " + std::to_string(streams));
    ThreadJob job(
        3, "tcp",
        {setting("streams", streams), setting("split_threshold", "4KiB")});
    job.run(
        [&](hvd_conformance::World& world) { exchange_every_size(world, 4); });
  }
}

TEST(TcpTest, OneStreamCarriesEverySize) {
  ThreadJob job(2, "tcp", {setting("streams", 1)});
  job.run(
      [&](hvd_conformance::World& world) { exchange_every_size(world, 2); });
}

TEST(TcpTest, AbortWhileStripedFailsTheTransferOnBothRanks) {
  ThreadJob job(2, "tcp",
                {setting("streams", 4), setting("split_threshold", "4KiB")});
  job.run([&](hvd_conformance::World& world) {
    SuiteOptions o;
    CaseContext ctx = context(world, o);
    Session s(ctx);
    s.connect_all(ConnectOrder::kTogether);
    const int peer = 1 - world.rank();
    // More than the sockets buffer, so parts are still on their way on
    // every stream when rank 0 aborts.
    constexpr size_t kBig = 256u << 20;
    Buffer big(kBig);
    if (world.rank() == 0) {
      hvd_conformance::Op* r = s.recv(peer, big.data(), kBig, 5);
      for (int i = 0; i < 3; ++i) s.test(r);
      ASSERT_FALSE(r->done);
      std::thread aborter(
          [&] { ctx.api.abort(s.transport(), HVD_ERR_ABORTED, peer); });
      aborter.join();
      s.wait(r);
      EXPECT_EQ(r->result.status, HVD_ERR_ABORTED);
      EXPECT_EQ(r->result.peer, peer);
      ctx.barrier();
      s.close();  // the peer's send now fails instead of waiting
    } else {
      hvd_conformance::Op* w = s.send(peer, big.data(), kBig, 5);
      ctx.barrier();
      s.wait(w);
      EXPECT_EQ(w->result.status, HVD_ERR_PEER_FAILED);
      EXPECT_EQ(w->result.peer, peer);
    }
  });
}

// ---- buffers for messages that arrive before their receive ---------------

TEST(TcpBufferPool, ABufferGivenBackIsHandedOutAgain) {
  hvd_tcp::BufferPool pool(64u << 20);
  uint64_t capacity = 0;
  uint8_t* a = pool.take((1u << 20) - 5, &capacity);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(capacity, 1u << 20);  // sizes go up to a power of two
  pool.put(a, capacity);
  EXPECT_EQ(pool.kept_bytes(), 1u << 20);
  uint64_t again = 0;
  EXPECT_EQ(pool.take(1u << 20, &again), a);
  EXPECT_EQ(again, 1u << 20);
  EXPECT_EQ(pool.kept_bytes(), 0u);
  pool.put(a, again);
}

TEST(TcpBufferPool, TheSmallestBufferThatFitsIsTaken) {
  hvd_tcp::BufferPool pool(64u << 20);
  uint64_t c1 = 0, c2 = 0, c3 = 0;
  uint8_t* small = pool.take(10, &c1);
  uint8_t* mid = pool.take(100000, &c2);
  uint8_t* large = pool.take(3u << 20, &c3);
  EXPECT_EQ(c1, 4096u);
  EXPECT_EQ(c2, 131072u);
  EXPECT_EQ(c3, 4u << 20);
  pool.put(large, c3);
  pool.put(small, c1);
  pool.put(mid, c2);
  uint64_t c = 0;
  EXPECT_EQ(pool.take(5000, &c), mid);
  EXPECT_EQ(c, c2);
  uint8_t* fresh = pool.take(8u << 20, &c);  // nothing kept fits
  EXPECT_NE(fresh, large);
  EXPECT_EQ(c, 8u << 20);
  pool.put(fresh, c);
  pool.put(mid, c2);
}

TEST(TcpBufferPool, KeepsNoMoreThanItsBound) {
  hvd_tcp::BufferPool pool(3u << 20);
  std::vector<std::pair<uint8_t*, uint64_t>> taken;
  for (int i = 0; i < 5; ++i) {
    uint64_t c = 0;
    taken.emplace_back(pool.take(1u << 20, &c), c);
  }
  for (auto& [data, c] : taken) pool.put(data, c);
  EXPECT_EQ(pool.kept_bytes(), 3u << 20);
  uint64_t c = 0;
  uint8_t* big = pool.take(2u << 20, &c);  // none of the kept ones fits
  EXPECT_EQ(c, 2u << 20);
  EXPECT_EQ(pool.kept_bytes(), 3u << 20);
  // A larger buffer displaces smaller ones rather than being dropped.
  pool.put(big, c);
  EXPECT_EQ(pool.kept_bytes(), 3u << 20);
  uint64_t again = 0;
  EXPECT_EQ(pool.take(2u << 20, &again), big);
  pool.put(big, again);
}

}  // namespace
}  // namespace hvd_transport_test
