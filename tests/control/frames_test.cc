// The wire format and the tree's shape, without a control plane.
#include "control/frames.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "control/net.h"
#include "control/tree.h"

namespace hvd::control {
namespace {

TEST(Tree, EveryRankHasOneParentAndTheTreeIsConnected) {
  for (int arity : {1, 2, 4, 7}) {
    for (int size = 1; size <= 40; ++size) {
      std::multiset<int> children_seen;
      for (int r = 0; r < size; ++r) {
        KaryTree tree(r, size, arity);
        for (int c : tree.children()) {
          children_seen.insert(c);
          EXPECT_EQ(KaryTree(c, size, arity).parent(), r);
        }
        EXPECT_LE(static_cast<int>(tree.children().size()), arity);
      }
      EXPECT_EQ(static_cast<int>(children_seen.size()), size - 1);
      for (int r = 1; r < size; ++r) EXPECT_EQ(children_seen.count(r), 1u);
      EXPECT_EQ(KaryTree(0, size, arity).parent(), -1);
    }
  }
  EXPECT_EQ(KaryTree(4095, 4096, 4).depth(), 6);
}

TEST(Messages, RoundTrip) {
  Hello hello;
  hello.rank = 3;
  hello.size = 9;
  hello.epoch = 1ull << 40;
  hello.token = 0xfeedface12345678ull;
  hello.job_id = "job-1";
  hello.host = "node-7";
  auto bytes = encode(hello);
  Hello back;
  ASSERT_TRUE(decode(bytes.data(), bytes.size(), &back));
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.size, 9);
  EXPECT_EQ(back.epoch, 1ull << 40);
  EXPECT_EQ(back.token, hello.token);
  EXPECT_EQ(back.job_id, "job-1");
  EXPECT_EQ(back.host, "node-7");
  // Truncated input is refused, not read past.
  for (size_t cut = 0; cut < bytes.size(); ++cut)
    EXPECT_FALSE(decode(bytes.data(), cut, &back)) << cut;

  FailureNote note{5, "node-2", "no heartbeat for 10 s"}, note_back;
  auto note_bytes = encode(note);
  ASSERT_TRUE(decode(note_bytes.data(), note_bytes.size(), &note_back));
  EXPECT_EQ(note_back.rank, 5);
  EXPECT_EQ(note_back.host, "node-2");
  EXPECT_EQ(note_back.reason, "no heartbeat for 10 s");
}

class SocketPair : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0);
    set_nonblocking(fds_[0]);
    set_nonblocking(fds_[1]);
  }
  void TearDown() override {
    close(fds_[0]);
    close(fds_[1]);
  }
  int fds_[2];
};

TEST_F(SocketPair, LargeFramesArriveWholeAndInOrder) {
  // More than the socket buffer holds: the writer keeps the rest pending,
  // the reader grows to the frame.
  std::vector<uint8_t> big(3 * 1024 * 1024);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 13);
  FrameWriter writer;
  FrameWriter::Part part{big.data(), big.size()};
  ASSERT_TRUE(writer.send(fds_[0], FrameType::broadcast, &part, 1));
  EXPECT_TRUE(writer.pending());
  ASSERT_TRUE(writer.send(fds_[0], FrameType::heartbeat));  // queued behind

  FrameReader reader;
  std::vector<FrameType> types;
  std::vector<uint8_t> first;
  while (types.size() < 2) {
    ASSERT_TRUE(writer.flush(fds_[0]));
    reader.read_from(fds_[1]);
    FrameType type;
    const uint8_t* data;
    uint32_t size;
    bool bad;
    while (reader.next(&type, &data, &size, &bad)) {
      types.push_back(type);
      if (type == FrameType::broadcast) first.assign(data, data + size);
    }
    ASSERT_FALSE(bad);
  }
  EXPECT_EQ(types[0], FrameType::broadcast);
  EXPECT_EQ(types[1], FrameType::heartbeat);
  EXPECT_EQ(first, big);
  EXPECT_FALSE(writer.pending());
}

TEST_F(SocketPair, ManySmallFramesInOneRead) {
  FrameWriter writer;
  for (uint32_t i = 0; i < 100; ++i) {
    uint8_t bytes[4];
    put_u32(bytes, i);
    FrameWriter::Part part{bytes, sizeof bytes};
    ASSERT_TRUE(writer.send(fds_[0], FrameType::gather, &part, 1));
  }
  FrameReader reader;
  uint32_t expected = 0;
  while (expected < 100) {
    ASSERT_GT(reader.read_from(fds_[1]), 0);
    FrameType type;
    const uint8_t* data;
    uint32_t size;
    bool bad;
    while (reader.next(&type, &data, &size, &bad)) {
      ASSERT_EQ(size, 4u);
      EXPECT_EQ(get_u32(data), expected++);
    }
  }
}

TEST_F(SocketPair, ImpossibleLengthIsBad) {
  uint8_t header[8];
  put_u32(header, kMaxFramePayload + 1);
  put_u32(header + 4, static_cast<uint32_t>(FrameType::gather));
  ASSERT_EQ(write(fds_[0], header, sizeof header), 8);
  FrameReader reader;
  ASSERT_EQ(reader.read_from(fds_[1]), 8);
  FrameType type;
  const uint8_t* data;
  uint32_t size;
  bool bad;
  EXPECT_FALSE(reader.next(&type, &data, &size, &bad));
  EXPECT_TRUE(bad);
}

TEST(Net, SplitsHostAndPort) {
  std::string host;
  int port = 0;
  EXPECT_TRUE(split_host_port("10.0.0.1:4242", &host, &port));
  EXPECT_EQ(host, "10.0.0.1");
  EXPECT_EQ(port, 4242);
  EXPECT_FALSE(split_host_port("10.0.0.1", &host, &port));
  EXPECT_FALSE(split_host_port("10.0.0.1:99999", &host, &port));
  EXPECT_FALSE(split_host_port(":80", &host, &port));
}

TEST(Net, ListenAddressFollowsTheConfiguredInterface) {
  auto local = choose_listen_address({}, true, "whatever");
  EXPECT_EQ(local.publish_ip, "127.0.0.1");
  auto loopback = choose_listen_address({"no-such-if0", "lo"}, false, "");
  EXPECT_EQ(loopback.bind_ip, "127.0.0.1");
  EXPECT_EQ(loopback.publish_ip, "127.0.0.1");
  EXPECT_THROW(choose_listen_address({"no-such-if0"}, false, ""),
               std::exception);
  auto remote = choose_listen_address({}, false, "localhost");
  EXPECT_EQ(remote.bind_ip.empty(), false);
  EXPECT_EQ(remote.publish_ip.empty(), false);
}

TEST(Net, DescribesDurations) {
  using namespace std::chrono_literals;
  EXPECT_EQ(describe_duration(10s), "10 s");
  EXPECT_EQ(describe_duration(300ms), "300 ms");
  EXPECT_EQ(describe_duration(1500ms), "1.5 s");
}

// ---- limits on what a peer sends --------------------------------------------

// Feeds `bytes` to a reader as one recv() would.
void feed(FrameReader& reader, const std::vector<uint8_t>& bytes) {
  size_t room = 0;
  uint8_t* at = reader.space(&room);
  ASSERT_GE(room, bytes.size());
  std::copy(bytes.begin(), bytes.end(), at);
  reader.commit(bytes.size());
}

std::vector<uint8_t> header(uint32_t length, FrameType type) {
  std::vector<uint8_t> out(kFrameHeaderSize);
  put_u32(out.data(), length);
  put_u32(out.data() + 4, static_cast<uint32_t>(type));
  return out;
}

// Whether a reader holding no complete frame refuses the one in progress.
bool refuses(FrameReader& reader) {
  FrameType type;
  const uint8_t* payload;
  uint32_t size;
  bool bad = false;
  EXPECT_FALSE(reader.next(&type, &payload, &size, &bad));
  return bad;
}

TEST(Limits, AHandshakeFrameOverTheLimitIsRefusedBeforeItsBytesArrive) {
  FrameReader reader(kMaxHandshakePayload);
  feed(reader, header(kMaxHandshakePayload + 1, FrameType::hello));
  EXPECT_TRUE(refuses(reader));
  EXPECT_EQ(reader.why_bad(), "a frame of 65537 bytes, over the limit of 65536");

  // A link's reader takes the same header and waits for the payload.
  FrameReader link;
  feed(link, header(kMaxHandshakePayload + 1, FrameType::gather));
  EXPECT_FALSE(refuses(link));
}

TEST(Limits, ALinkFrameOverOneGibibyteIsRefused) {
  FrameReader reader;
  feed(reader, header(kMaxFramePayload + 1, FrameType::broadcast));
  EXPECT_TRUE(refuses(reader));
}

// A peer that declares the largest frame and trickles its bytes: the
// reader's room grows with what arrived, not to the gibibyte declared.
TEST(Limits, AHeaderAloneDoesNotMakeTheReaderAllocateTheFrame) {
  FrameReader reader;
  feed(reader, header(kMaxFramePayload, FrameType::gather));
  const std::vector<uint8_t> chunk(16 * 1024, 7);
  size_t arrived = kFrameHeaderSize;
  for (int i = 0; i < 64; ++i) {
    feed(reader, chunk);
    arrived += chunk.size();
  }
  EXPECT_FALSE(refuses(reader));
  EXPECT_LE(reader.capacity(), 2 * arrived + 64 * 1024);
}

TEST(Limits, AFrameLargerThanTheBufferArrivesWhole) {
  FrameReader reader;
  std::vector<uint8_t> payload(3 * 1024 * 1024 + 5);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 31);
  std::vector<uint8_t> wire = header(uint32_t(payload.size()), FrameType::gather);
  wire.insert(wire.end(), payload.begin(), payload.end());
  FrameType type;
  const uint8_t* got = nullptr;
  uint32_t size = 0;
  bool bad = false;
  for (size_t at = 0; at < wire.size();) {
    EXPECT_FALSE(reader.next(&type, &got, &size, &bad));
    size_t room = 0;
    uint8_t* to = reader.space(&room);
    size_t n = std::min({room, wire.size() - at, size_t{40000}});
    std::copy_n(wire.begin() + ptrdiff_t(at), n, to);
    reader.commit(n);
    at += n;
  }
  ASSERT_TRUE(reader.next(&type, &got, &size, &bad));
  EXPECT_EQ(type, FrameType::gather);
  ASSERT_EQ(size, payload.size());
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), got));
}

std::vector<uint8_t> bundle_of(
    const std::vector<std::pair<int, std::string>>& entries) {
  std::vector<uint8_t> bundle;
  for (const auto& [rank, text] : entries)
    append_gather_entry(bundle, rank,
                        reinterpret_cast<const uint8_t*>(text.data()),
                        text.size());
  return bundle;
}

TEST(Limits, AGatherBundleMustHoldEachRankOnce) {
  std::vector<std::vector<uint8_t>> by_rank;
  auto good = bundle_of({{1, "b"}, {0, "a"}});
  ASSERT_TRUE(decode_gather_bundle(good.data(), good.size(), 2, &by_rank));
  EXPECT_EQ(by_rank[0], std::vector<uint8_t>{'a'});
  EXPECT_EQ(by_rank[1], std::vector<uint8_t>{'b'});

  auto outside = bundle_of({{0, "a"}, {2, "c"}});
  EXPECT_FALSE(decode_gather_bundle(outside.data(), outside.size(), 2, &by_rank));
  auto repeated = bundle_of({{0, "a"}, {0, "a"}});
  EXPECT_FALSE(
      decode_gather_bundle(repeated.data(), repeated.size(), 2, &by_rank));
  auto extra = bundle_of({{0, "a"}, {1, "b"}, {1, "b"}});
  EXPECT_FALSE(decode_gather_bundle(extra.data(), extra.size(), 2, &by_rank));
  // A length running past the end.
  auto cut = bundle_of({{0, "a"}, {1, "bbbb"}});
  cut.resize(cut.size() - 2);
  EXPECT_FALSE(decode_gather_bundle(cut.data(), cut.size(), 2, &by_rank));
}

TEST(Limits, AHostTableMustNameAHostForEveryRank) {
  HostTable table{{"a", "b"}, {0, 1, 0}};
  auto bytes = encode(table);
  HostTable back;
  ASSERT_TRUE(decode(bytes.data(), bytes.size(), 3, &back));
  EXPECT_EQ(back.names, table.names);
  EXPECT_EQ(back.index, table.index);

  EXPECT_FALSE(decode(bytes.data(), bytes.size(), 4, &back));  // too few
  HostTable dangling{{"a"}, {0, 1, 0}};
  bytes = encode(dangling);
  EXPECT_FALSE(decode(bytes.data(), bytes.size(), 3, &back));
  // More names than ranks: refused before any is read.
  std::vector<uint8_t> many;
  Encoder(many).u32(1000000).u32(3);
  EXPECT_FALSE(decode(many.data(), many.size(), 3, &back));
}

TEST(Limits, AFailureNoteWithAnOverlongReasonIsRefused) {
  FailureNote note{1, "host", std::string(kMaxNoteText, 'x')};
  auto bytes = encode(note);
  FailureNote back;
  EXPECT_TRUE(decode(bytes.data(), bytes.size(), &back));
  note.reason += "x";
  bytes = encode(note);
  EXPECT_FALSE(decode(bytes.data(), bytes.size(), &back));
}

}  // namespace
}  // namespace hvd::control
