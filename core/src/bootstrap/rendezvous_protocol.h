// Messages of the horovodrun rendezvous protocol (tools/horovodrun/
// PROTOCOL.md): frame bodies built and parsed field by field, and the
// HMAC-SHA256 tag that authenticates each frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hvd::rendezvous {

constexpr char kMagic[4] = {'H', 'V', 'R', '1'};
constexpr size_t kNonceBytes = 16;
constexpr size_t kTagBytes = 32;
constexpr size_t kMaxKeyBytes = 1024;
constexpr size_t kMaxValueBytes = 1 << 20;
constexpr size_t kMaxResponseBytes = size_t{256} << 20;

enum Op : uint8_t { kJoin = 0x01, kPut = 0x02, kGet = 0x03, kAllgather = 0x04 };
constexpr uint8_t kResponseBit = 0x80;

enum Status : uint8_t { kOk = 0, kTimeout = 1, kError = 2 };

// Direction byte mixed into the tag, so a request cannot pass as a response.
constexpr uint8_t kFromClient = 'C';
constexpr uint8_t kFromServer = 'S';

// Appends big-endian fields to a body.
class Writer {
 public:
  Writer& u8(uint8_t v);
  Writer& u16(uint16_t v);
  Writer& u32(uint32_t v);
  Writer& u64(uint64_t v);
  Writer& str(const std::string& s);            // u16 length + bytes
  Writer& blob(const std::vector<uint8_t>& b);  // u32 length + bytes
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Reads fields back; every read past the end throws hvd::Error.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t u8();
  uint16_t u16();
  uint32_t u32();
  uint64_t u64();
  std::string str();
  std::vector<uint8_t> blob();
  bool done() const { return pos_ == size_; }

 private:
  const uint8_t* take(size_t n);
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// HMAC-SHA256(secret, "HVR1" || direction || nonce || body).
std::vector<uint8_t> frame_tag(const std::vector<uint8_t>& secret,
                               uint8_t direction,
                               const std::vector<uint8_t>& nonce,
                               const std::vector<uint8_t>& body);
// Constant-time comparison of a received tag with the expected one.
bool tags_equal(const uint8_t* a, const std::vector<uint8_t>& b);

// A response as the client sees it once its frame is checked.
struct Response {
  uint8_t status = kOk;
  std::vector<uint8_t> fields;  // what follows the status byte
};

// The length prefix of a response frame: throws hvd::Error naming `peer`
// when it is outside what a response can be.
void check_response_length(uint32_t length, const std::string& peer);

// Opens the response frame (tag, then body) to request `seq` of `op`:
// checks the tag against `secret` and `nonce`, the sequence number and the
// op. Throws hvd::Error naming `peer` on anything else.
Response open_response(const uint8_t* frame, size_t size,
                       const std::vector<uint8_t>& secret,
                       const std::vector<uint8_t>& nonce, uint64_t seq, Op op,
                       const std::string& peer);

// The fields of an ALLGATHER's OK: u32 count, then `count` blobs; throws
// unless the count is `ranks` and nothing is left over.
std::vector<std::vector<uint8_t>> decode_allgather(
    const std::vector<uint8_t>& fields, uint32_t ranks,
    const std::string& peer);

// The fields of a TIMEOUT: u32 count, then the missing ranks (at most
// `ranks`, each below it).
std::vector<int> decode_missing(const std::vector<uint8_t>& fields,
                                uint32_t ranks, const std::string& peer);

// "0a1b..." -> bytes; throws hvd::Error HVD_ERR_CONFIG naming `what` on bad
// text.
std::vector<uint8_t> decode_hex(const std::string& hex,
                                const std::string& what);

}  // namespace hvd::rendezvous
