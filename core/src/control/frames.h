// The control plane's wire format. Every message is a frame: an 8-byte
// header (payload length, type; little-endian u32 each) and the payload.
// FrameReader turns what a non-blocking socket delivers into frames without
// allocating once warm (and grows with what arrives, not with what a header
// declares); FrameWriter sends a frame at once when the socket
// takes it and keeps only what it did not.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hvd::control {

enum class FrameType : uint32_t {
  hello = 1,      // child -> parent: Hello
  welcome = 2,    // parent -> child: Welcome
  reject = 3,     // parent -> child: reason text; the parent then closes
  heartbeat = 4,  // empty
  gather = 5,     // child -> parent: u64 sequence, then a gather bundle
  broadcast = 6,  // parent -> child: u64 sequence, then the payload
  failure = 7,    // either way: FailureNote
  bye = 8,        // either way: the sender is leaving normally
  summon = 9,     // either way: u64, a round the sender waits in
};

const char* frame_type_name(FrameType type);

// Bootstrap keys a rank with children publishes: "ip:port" of its
// listener, and the 8-byte token its children must present.
constexpr const char* kAddressKey = "control.addr";
constexpr const char* kTokenKey = "control.token";

constexpr size_t kFrameHeaderSize = 8;
constexpr uint32_t kMaxFramePayload = 1u << 30;
// Until a peer has shaken hands, its frames are small: a hello, welcome or
// reject never comes near this, so a longer one is refused before the reader
// makes room for it.
constexpr uint32_t kMaxHandshakePayload = 64 * 1024;
constexpr uint32_t kProtocolMagic = 0x43445648;  // "HVDC"
constexpr uint32_t kProtocolVersion = 2;

void put_u32(uint8_t* out, uint32_t value);
void put_u64(uint8_t* out, uint64_t value);
uint32_t get_u32(const uint8_t* in);
uint64_t get_u64(const uint8_t* in);

// Appends little-endian fields and length-prefixed strings.
class Encoder {
 public:
  explicit Encoder(std::vector<uint8_t>& out) : out_(out) {}
  Encoder& u32(uint32_t value);
  Encoder& u64(uint64_t value);
  Encoder& str(const std::string& value);
  Encoder& bytes(const uint8_t* data, size_t size);

 private:
  std::vector<uint8_t>& out_;
};

// Reads what Encoder wrote; ok() turns false (and stays so) on a short or
// malformed input instead of reading past the end.
class Decoder {
 public:
  Decoder(const uint8_t* data, size_t size) : at_(data), end_(data + size) {}
  uint32_t u32();
  uint64_t u64();
  std::string str();
  // A span of `size` bytes inside the input, or nullptr.
  const uint8_t* bytes(size_t size);
  bool ok() const { return ok_; }
  bool done() const { return ok_ && at_ == end_; }

 private:
  const uint8_t* at_;
  const uint8_t* end_;
  bool ok_ = true;
};

// The handshake a child sends on connecting to its parent.
struct Hello {
  uint32_t magic = kProtocolMagic;
  uint32_t version = kProtocolVersion;
  int32_t rank = -1;
  int32_t size = 0;
  uint64_t epoch = 0;
  uint64_t token = 0;  // the parent's, read from the bootstrap
  std::string job_id;
  std::string host;
};
std::vector<uint8_t> encode(const Hello& hello);
bool decode(const uint8_t* data, size_t size, Hello* hello);

struct Welcome {
  int32_t rank = -1;
  std::string host;
};
std::vector<uint8_t> encode(const Welcome& welcome);
bool decode(const uint8_t* data, size_t size, Welcome* welcome);

// A failure note's texts are a host name and a one-line reason; a decoder
// refuses longer ones.
constexpr size_t kMaxNoteText = 64 * 1024;
struct FailureNote {
  int32_t rank = -1;
  std::string host;
  std::string reason;
};
std::vector<uint8_t> encode(const FailureNote& note);
bool decode(const uint8_t* data, size_t size, FailureNote* note);

// A gather bundle is a run of entries (u32 rank, u32 length, bytes), one per
// rank of the sender's subtree, in no particular order.
void append_gather_entry(std::vector<uint8_t>& bundle, int rank,
                         const uint8_t* data, size_t size);
// The whole world's bundle at the root: exactly one entry per rank below
// `world_size`. false on anything else (a rank out of range or repeated, a
// length past the end, bytes left over).
bool decode_gather_bundle(const uint8_t* data, size_t size, int world_size,
                          std::vector<std::vector<uint8_t>>* by_rank);

// Every rank's host: the distinct names, and each rank's index into them.
struct HostTable {
  std::vector<std::string> names;
  std::vector<uint32_t> index;  // by rank
};
std::vector<uint8_t> encode(const HostTable& table);
// false unless there are `world_size` indices, each naming a name.
bool decode(const uint8_t* data, size_t size, int world_size,
            HostTable* table);

class FrameReader {
 public:
  explicit FrameReader(uint32_t max_payload = kMaxFramePayload);
  // One recv() of what the socket has. >0: bytes read; 0: end of stream;
  // -1: errno set (EAGAIN when nothing is waiting).
  ssize_t read_from(int fd);
  // What read_from() does around its recv(): room for at least one byte
  // (valid until commit()), then `n` bytes written there.
  uint8_t* space(size_t* room);
  void commit(size_t n);
  // The next complete frame, valid until the next space(). false when none
  // is complete; *bad set when the header declares more than the limit
  // (why_bad() says how much).
  bool next(FrameType* type, const uint8_t** payload, uint32_t* size,
            bool* bad);
  std::string why_bad() const;
  // Lifts or lowers the limit on a frame's payload (after a handshake).
  void set_max_payload(uint32_t max_payload) { max_payload_ = max_payload; }
  // Bytes of room allocated: at most about twice what arrived of the frame
  // in progress, whatever its header declares.
  size_t capacity() const { return buffer_.size(); }

 private:
  std::vector<uint8_t> buffer_;
  size_t begin_ = 0;  // first unparsed byte
  size_t end_ = 0;    // one past the last received byte
  uint32_t max_payload_;
  uint32_t refused_length_ = 0;
};

class FrameWriter {
 public:
  struct Part {
    const void* data;
    size_t size;
  };
  // Sends header + parts as one frame, as far as the socket takes it now;
  // the rest waits in pending() for flush(). Frames queued behind pending
  // bytes are appended, keeping order. false on a socket error (errno set;
  // EPIPE and ECONNRESET when the peer is gone).
  bool send(int fd, FrameType type, const Part* parts, size_t count);
  bool send(int fd, FrameType type) { return send(fd, type, nullptr, 0); }
  // Sends pending bytes as far as the socket takes them.
  bool flush(int fd);
  bool pending() const { return sent_ < queued_.size(); }
  // Bytes written by the last send() or flush(), for liveness bookkeeping.
  size_t last_written() const { return last_written_; }

 private:
  std::vector<uint8_t> queued_;
  size_t sent_ = 0;
  size_t last_written_ = 0;
};

}  // namespace hvd::control
