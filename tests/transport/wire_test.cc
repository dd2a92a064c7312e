// What the tcp and shm transports refuse from a peer, checked without
// sockets: the functions their handshakes and receive paths call.
#include <gtest/gtest.h>

#include <cstring>

#include "shm/ring.h"
#include "shm/wire.h"
#include "tcp/wire.h"

namespace {

hvd_tcp::Hello tcp_hello() {
  hvd_tcp::Hello h{};
  h.magic = hvd_tcp::kHelloMagic;
  h.version = hvd_tcp::kProtocolVersion;
  h.stream_index = 1;
  h.stream_count = 4;
  h.rank = 3;
  return h;
}

TEST(TcpWire, AHelloNeedsAStreamInRangeAndARank) {
  EXPECT_EQ(hvd_tcp::hello_problem(tcp_hello()), "");
  auto h = tcp_hello();
  h.stream_count = 17;
  EXPECT_EQ(hvd_tcp::hello_problem(h), "17 streams (1 to 16)");
  h = tcp_hello();
  h.stream_index = 4;
  EXPECT_EQ(hvd_tcp::hello_problem(h), "stream 4 of 4");
  h = tcp_hello();
  h.rank = -5;
  EXPECT_EQ(hvd_tcp::hello_problem(h), "rank -5");
  h = tcp_hello();
  h.version = 9;
  EXPECT_EQ(hvd_tcp::hello_problem(h), "protocol version 9, this rank speaks 1");
}

TEST(TcpWire, AnAckMustCarryAKnownStatus) {
  hvd_tcp::Ack a{};
  a.magic = hvd_tcp::kHelloMagic;
  a.status = HVD_ERR_EPOCH_MISMATCH;
  EXPECT_EQ(hvd_tcp::ack_problem(a), "");
  a.status = 1234;
  EXPECT_EQ(hvd_tcp::ack_problem(a), "an unknown status 1234");
  a.status = HVD_OK;
  a.magic = 0;
  EXPECT_EQ(hvd_tcp::ack_problem(a), "not a horovod tcp listener");
}

TEST(TcpWire, MessageHeadersAreBoundedAndTheirPartsConsistent) {
  uint64_t piece = 0;
  EXPECT_EQ(hvd_tcp::header_problem({1, 1 << 20, 4, 0}, 4, 0, &piece), "");
  EXPECT_EQ(piece, uint64_t{1} << 18);
  EXPECT_EQ(hvd_tcp::header_problem({1, 10, 1, 7}, 4, 7, &piece), "");
  EXPECT_EQ(piece, 10u);

  EXPECT_EQ(hvd_tcp::header_problem({1, 10, 1, 8}, 4, 7, &piece),
            "message 8 where 7 was due");
  EXPECT_EQ(hvd_tcp::header_problem({1, hvd_tcp::kMaxMessageBytes + 1, 1, 0},
                                    4, 0, &piece),
            "a message of 1099511627777 bytes (at most 1099511627776)");
  // These divided by zero before they were refused: an empty message in
  // parts, and a length whose rounding wrapped around.
  EXPECT_NE(hvd_tcp::header_problem({1, 0, 2, 0}, 4, 0, &piece), "");
  EXPECT_NE(hvd_tcp::header_problem({1, UINT64_MAX, 4, 0}, 4, 0, &piece), "");
  // More parts than streams, or not the parts the length makes.
  EXPECT_NE(hvd_tcp::header_problem({1, 1 << 20, 5, 0}, 4, 0, &piece), "");
  EXPECT_NE(hvd_tcp::header_problem({1, 100, 3, 0}, 4, 0, &piece), "");
}

hvd_shm::Hello shm_hello(uint16_t kind) {
  hvd_shm::Hello h{};
  h.magic = hvd_shm::kHandleMagic;
  h.version = hvd_shm::kProtocolVersion;
  h.kind = kind;
  h.rank = 1;
  h.ring_bytes = 1 << 16;
  return h;
}

TEST(ShmWire, AHelloMustBeWholeOfItsKindWithAKnownStatus) {
  using hvd_shm::hello_problem;
  EXPECT_EQ(hello_problem(shm_hello(hvd_shm::kHello), sizeof(hvd_shm::Hello),
                          hvd_shm::kHello),
            "");
  EXPECT_EQ(hello_problem(shm_hello(hvd_shm::kHello), 10, hvd_shm::kHello),
            "a handshake message of 10 bytes, expected " +
                std::to_string(sizeof(hvd_shm::Hello)));
  EXPECT_EQ(hello_problem(shm_hello(hvd_shm::kHelloReply),
                          sizeof(hvd_shm::Hello), hvd_shm::kHello),
            "not a horovod shm handshake");
  auto h = shm_hello(hvd_shm::kHelloReply);
  h.status = -99;
  EXPECT_EQ(hello_problem(h, sizeof h, hvd_shm::kHelloReply),
            "an unknown status -99");
}

// A segment header as the connecting side writes it.
struct Segment {
  explicit Segment(uint64_t ring) : size(hvd_shm::segment_bytes(ring)) {
    std::memset(static_cast<void*>(&header), 0, sizeof header);
    hvd_shm::init_segment(&header, ring);
  }
  hvd_shm::SegmentHeader header;
  size_t size;
};

TEST(ShmWire, ASegmentMustPlaceItsRingsInsideItself) {
  using hvd_shm::segment_problem;
  Segment s(1 << 16);
  EXPECT_EQ(segment_problem(&s.header, s.size, 1 << 16), "");
  EXPECT_EQ(segment_problem(&s.header, 100, 1 << 16), "a segment of 100 bytes");
  EXPECT_EQ(segment_problem(&s.header, s.size, 1 << 17),
            "rings of 65536 bytes, the hello said 131072");
  EXPECT_EQ(segment_problem(&s.header, s.size - 1, 1 << 16),
            "a segment of " + std::to_string(s.size - 1) +
                " bytes for rings of 65536");

  // The data offset decides where the rings are read and written.
  Segment shifted(1 << 16);
  shifted.header.data_offset = uint64_t{1} << 40;
  EXPECT_EQ(segment_problem(&shifted.header, shifted.size, 1 << 16),
            "ring data at offset 1099511627776, expected 4096");

  // Rings are a power of two within the option's range.
  Segment odd(5000);
  EXPECT_NE(segment_problem(&odd.header, odd.size, 5000), "");
  Segment tiny(2);
  EXPECT_NE(segment_problem(&tiny.header, tiny.size, 2), "");
}

}  // namespace
