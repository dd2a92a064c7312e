#include "bootstrap/rendezvous_protocol.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "common/error.h"

namespace hvd::rendezvous {

Writer& Writer::u8(uint8_t v) {
  bytes_.push_back(v);
  return *this;
}

Writer& Writer::u16(uint16_t v) { return u8(v >> 8).u8(v & 0xff); }
Writer& Writer::u32(uint32_t v) { return u16(v >> 16).u16(v & 0xffff); }
Writer& Writer::u64(uint64_t v) { return u32(v >> 32).u32(v & 0xffffffffu); }

Writer& Writer::str(const std::string& s) {
  if (s.size() > UINT16_MAX) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "rendezvous: string of " +
                                              std::to_string(s.size()) +
                                              " bytes is too long");
  }
  u16(static_cast<uint16_t>(s.size()));
  bytes_.insert(bytes_.end(), s.begin(), s.end());
  return *this;
}

Writer& Writer::blob(const std::vector<uint8_t>& b) {
  u32(static_cast<uint32_t>(b.size()));
  bytes_.insert(bytes_.end(), b.begin(), b.end());
  return *this;
}

const uint8_t* Reader::take(size_t n) {
  if (n > size_ - pos_) {
    throw Error(HVD_ERR_PEER_FAILED,
                "rendezvous: malformed response (field runs past the end)");
  }
  const uint8_t* p = data_ + pos_;
  pos_ += n;
  return p;
}

uint8_t Reader::u8() { return *take(1); }

uint16_t Reader::u16() {
  const uint8_t* p = take(2);
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

uint32_t Reader::u32() {
  uint32_t hi = u16();
  return hi << 16 | u16();
}

uint64_t Reader::u64() {
  uint64_t hi = u32();
  return hi << 32 | u32();
}

std::string Reader::str() {
  size_t n = u16();
  const uint8_t* p = take(n);
  return std::string(p, p + n);
}

std::vector<uint8_t> Reader::blob() {
  size_t n = u32();
  const uint8_t* p = take(n);
  return std::vector<uint8_t>(p, p + n);
}

std::vector<uint8_t> frame_tag(const std::vector<uint8_t>& secret,
                               uint8_t direction,
                               const std::vector<uint8_t>& nonce,
                               const std::vector<uint8_t>& body) {
  std::vector<uint8_t> message(kMagic, kMagic + sizeof kMagic);
  message.push_back(direction);
  message.insert(message.end(), nonce.begin(), nonce.end());
  message.insert(message.end(), body.begin(), body.end());
  std::vector<uint8_t> tag(kTagBytes);
  unsigned int tag_len = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            message.data(), message.size(), tag.data(), &tag_len) ||
      tag_len != kTagBytes) {
    throw Error(HVD_ERR_SYSTEM, "rendezvous: HMAC-SHA256 failed");
  }
  return tag;
}

bool tags_equal(const uint8_t* a, const std::vector<uint8_t>& b) {
  return b.size() == kTagBytes && CRYPTO_memcmp(a, b.data(), kTagBytes) == 0;
}

void check_response_length(uint32_t length, const std::string& peer) {
  // Tag, then u64 sequence, u8 op, u8 status.
  if (length < kTagBytes + 10 || length > kMaxResponseBytes) {
    throw Error(HVD_ERR_PEER_FAILED, peer + " sent a frame of " +
                                         std::to_string(length) + " bytes");
  }
}

Response open_response(const uint8_t* frame, size_t size,
                       const std::vector<uint8_t>& secret,
                       const std::vector<uint8_t>& nonce, uint64_t seq, Op op,
                       const std::string& peer) {
  check_response_length(static_cast<uint32_t>(std::min<size_t>(size, UINT32_MAX)),
                        peer);
  std::vector<uint8_t> reply(frame + kTagBytes, frame + size);
  if (!tags_equal(frame, frame_tag(secret, kFromServer, nonce, reply))) {
    throw Error(HVD_ERR_PEER_FAILED,
                peer + " sent a response that fails authentication");
  }
  Reader reader(reply.data(), reply.size());
  uint64_t reply_seq = reader.u64();
  uint8_t reply_op = reader.u8();
  if (reply_seq != seq || reply_op != (op | kResponseBit)) {
    throw Error(HVD_ERR_PEER_FAILED, peer + " answered out of order");
  }
  Response response;
  response.status = reader.u8();
  response.fields.assign(reply.begin() + 10, reply.end());
  return response;
}

std::vector<std::vector<uint8_t>> decode_allgather(
    const std::vector<uint8_t>& fields, uint32_t ranks,
    const std::string& peer) {
  Reader reader(fields.data(), fields.size());
  uint32_t count = reader.u32();
  if (count != ranks) {
    throw Error(HVD_ERR_PEER_FAILED, peer + " returned " +
                                         std::to_string(count) +
                                         " values for " +
                                         std::to_string(ranks) + " ranks");
  }
  std::vector<std::vector<uint8_t>> all;
  all.reserve(count);
  for (uint32_t i = 0; i < count; ++i) all.push_back(reader.blob());
  if (!reader.done())
    throw Error(HVD_ERR_PEER_FAILED,
                peer + " returned bytes after the last value");
  return all;
}

std::vector<int> decode_missing(const std::vector<uint8_t>& fields,
                                uint32_t ranks, const std::string& peer) {
  Reader reader(fields.data(), fields.size());
  uint32_t count = reader.u32();
  if (count > ranks) {
    throw Error(HVD_ERR_PEER_FAILED, peer + " named " +
                                         std::to_string(count) +
                                         " missing ranks of " +
                                         std::to_string(ranks));
  }
  std::vector<int> missing;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t rank = reader.u32();
    if (rank >= ranks) {
      throw Error(HVD_ERR_PEER_FAILED, peer + " named rank " +
                                           std::to_string(rank) +
                                           " of a job of " +
                                           std::to_string(ranks));
    }
    missing.push_back(static_cast<int>(rank));
  }
  return missing;
}

std::vector<uint8_t> decode_hex(const std::string& hex,
                                const std::string& what) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.empty() || hex.size() % 2 != 0) {
    throw Error(HVD_ERR_CONFIG, what +
                                    ": expected an even number of hex "
                                    "digits, got " +
                                    std::to_string(hex.size()));
  }
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      throw Error(HVD_ERR_CONFIG,
                  what + ": not a hex digit at position " +
                      std::to_string(hi < 0 ? 2 * i : 2 * i + 1));
    }
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

}  // namespace hvd::rendezvous
