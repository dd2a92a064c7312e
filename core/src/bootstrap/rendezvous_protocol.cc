#include "bootstrap/rendezvous_protocol.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

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
