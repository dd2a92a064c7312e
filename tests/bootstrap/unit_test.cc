// Pieces of the bootstrap that need no job: the host layout and the
// rendezvous protocol's encoding and tags.
#include <gtest/gtest.h>

#include <functional>

#include "bootstrap/layout.h"
#include "bootstrap/rendezvous_protocol.h"
#include "common/error.h"

namespace hvd {
namespace {

using rendezvous::Reader;
using rendezvous::Writer;

std::string hex(const std::vector<uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

TEST(Layout, HostsNumberedByLowestRank) {
  std::vector<std::string> hosts = {"b", "a", "b", "c", "a"};
  HostLayout l = layout_from_hosts(hosts, 4);
  EXPECT_EQ(l.host_of, (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(l.hostname, "a");
  EXPECT_EQ(l.cross_rank, 1);
  EXPECT_EQ(l.cross_size, 3);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_size, 2);

  HostLayout first = layout_from_hosts(hosts, 0);
  EXPECT_EQ(first.local_rank, 0);
  EXPECT_EQ(first.local_size, 2);
  EXPECT_EQ(first.cross_rank, 0);
}

TEST(Layout, SingleHost) {
  HostLayout l = layout_from_hosts({"h", "h", "h"}, 2);
  EXPECT_EQ(l.local_rank, 2);
  EXPECT_EQ(l.local_size, 3);
  EXPECT_EQ(l.cross_rank, 0);
  EXPECT_EQ(l.cross_size, 1);
}

TEST(Protocol, FieldsRoundTrip) {
  Writer w;
  w.u8(0xab)
      .u16(0x1234)
      .u32(0xdeadbeef)
      .u64(0x0102030405060708ull)
      .str("key")
      .blob({1, 2, 3});
  const auto& b = w.bytes();
  EXPECT_EQ(hex(std::vector<uint8_t>(b.begin(), b.begin() + 7)),
            "ab1234deadbeef");  // big-endian
  Reader r(b.data(), b.size());
  EXPECT_EQ(r.u8(), 0xab);
  EXPECT_EQ(r.u16(), 0x1234);
  EXPECT_EQ(r.u32(), 0xdeadbeefu);
  EXPECT_EQ(r.u64(), 0x0102030405060708ull);
  EXPECT_EQ(r.str(), "key");
  EXPECT_EQ(r.blob(), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_TRUE(r.done());
}

TEST(Protocol, ReadPastEndThrows) {
  Writer w;
  w.u32(100);  // a blob claiming 100 bytes, with none following
  Reader r(w.bytes().data(), w.bytes().size());
  EXPECT_THROW(r.blob(), Error);
}

// The tag layout of PROTOCOL.md: HMAC-SHA256(secret, "HVR1" || D || nonce ||
// body), pinned by a vector computed with Python's hmac module.
TEST(Protocol, TagMatchesDocumentedLayout) {
  std::vector<uint8_t> secret(32), nonce(16);
  for (int i = 0; i < 32; ++i) secret[i] = static_cast<uint8_t>(i);
  for (int i = 0; i < 16; ++i) nonce[i] = static_cast<uint8_t>(100 + i);
  Writer body;
  body.u64(7).u8(rendezvous::kPut).str("key").blob({'h', 'i'});
  EXPECT_EQ(hex(rendezvous::frame_tag(secret, rendezvous::kFromClient, nonce,
                                      body.bytes())),
            "13f7a9b5f4f4328d1118f6490e1b9bef63766ce9662fb76f1c970ab780678705");
  EXPECT_EQ(hex(rendezvous::frame_tag(secret, rendezvous::kFromServer, nonce,
                                      body.bytes())),
            "dc9c74993aadc8a99afe073ebf234913ba109cfa8a499eefbf77a050569b5f80");
}

TEST(Protocol, TagsCompare) {
  std::vector<uint8_t> a(32, 7), b(32, 7);
  EXPECT_TRUE(rendezvous::tags_equal(a.data(), b));
  b[31] = 8;
  EXPECT_FALSE(rendezvous::tags_equal(a.data(), b));
}

TEST(Protocol, DecodeHex) {
  EXPECT_EQ(rendezvous::decode_hex("00ff7A", "K"),
            (std::vector<uint8_t>{0x00, 0xff, 0x7a}));
  try {
    rendezvous::decode_hex("abc", "HOROVOD_SECRET_KEY");
    FAIL() << "odd length accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_CONFIG);
    EXPECT_NE(std::string(e.what()).find("HOROVOD_SECRET_KEY"),
              std::string::npos);
  }
  EXPECT_THROW(rendezvous::decode_hex("zz", "K"), Error);
  EXPECT_THROW(rendezvous::decode_hex("", "K"), Error);
}

// ---- what the client refuses from the service --------------------------------

std::vector<uint8_t> signed_frame(const std::vector<uint8_t>& secret,
                                  const std::vector<uint8_t>& nonce,
                                  const std::vector<uint8_t>& body) {
  auto frame = rendezvous::frame_tag(secret, rendezvous::kFromServer, nonce,
                                     body);
  frame.insert(frame.end(), body.begin(), body.end());
  return frame;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_PEER_FAILED);
    return e.what();
  }
  return "";
}

TEST(RendezvousLimits, ResponsesAreAuthenticatedAndInOrder) {
  std::vector<uint8_t> secret(32, 1), nonce(16, 2);
  Writer body;
  body.u64(5).u8(rendezvous::kGet | rendezvous::kResponseBit).u8(0);
  body.blob({'v'});
  auto frame = signed_frame(secret, nonce, body.bytes());
  auto response = rendezvous::open_response(
      frame.data(), frame.size(), secret, nonce, 5, rendezvous::kGet, "svc");
  EXPECT_EQ(response.status, rendezvous::kOk);

  EXPECT_NE(error_of([&] {
              rendezvous::open_response(frame.data(), frame.size(), secret,
                                        nonce, 6, rendezvous::kGet, "svc");
            }).find("svc answered out of order"),
            std::string::npos);
  frame.back() ^= 1;
  EXPECT_NE(error_of([&] {
              rendezvous::open_response(frame.data(), frame.size(), secret,
                                        nonce, 5, rendezvous::kGet, "svc");
            }).find("fails authentication"),
            std::string::npos);
  EXPECT_NE(error_of([] { rendezvous::check_response_length(12, "svc"); })
                .find("svc sent a frame of 12 bytes"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              rendezvous::check_response_length(
                  static_cast<uint32_t>(rendezvous::kMaxResponseBytes + 1),
                  "svc");
            }),
            "");
}

TEST(RendezvousLimits, MissingRanksMustBeRanksOfTheJob) {
  Writer ok;
  ok.u32(2).u32(0).u32(3);
  EXPECT_EQ(rendezvous::decode_missing(ok.bytes(), 4, "svc"),
            (std::vector<int>{0, 3}));
  Writer outside;
  outside.u32(1).u32(4);
  EXPECT_EQ(error_of([&] { rendezvous::decode_missing(outside.bytes(), 4, "svc"); }),
            "svc named rank 4 of a job of 4");
  Writer too_many;
  too_many.u32(4000000000u);
  EXPECT_EQ(error_of([&] { rendezvous::decode_missing(too_many.bytes(), 4, "svc"); }),
            "svc named 4000000000 missing ranks of 4");
}

TEST(RendezvousLimits, AnAllgatherAnswersOneValuePerRankAndNothingElse) {
  Writer ok;
  ok.u32(2).blob({'a'}).blob({});
  auto all = rendezvous::decode_allgather(ok.bytes(), 2, "svc");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], std::vector<uint8_t>{'a'});
  Writer wrong_count;
  wrong_count.u32(3).blob({}).blob({}).blob({});
  EXPECT_EQ(error_of([&] {
              rendezvous::decode_allgather(wrong_count.bytes(), 2, "svc");
            }),
            "svc returned 3 values for 2 ranks");
  Writer extra;
  extra.u32(1).blob({}).u8(0);
  EXPECT_EQ(error_of([&] { rendezvous::decode_allgather(extra.bytes(), 1, "svc"); }),
            "svc returned bytes after the last value");
}

}  // namespace
}  // namespace hvd
