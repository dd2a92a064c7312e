#include "control/frames.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace hvd::control {

const char* frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::hello:
      return "hello";
    case FrameType::welcome:
      return "welcome";
    case FrameType::reject:
      return "reject";
    case FrameType::heartbeat:
      return "heartbeat";
    case FrameType::gather:
      return "gather";
    case FrameType::broadcast:
      return "broadcast";
    case FrameType::failure:
      return "failure";
    case FrameType::bye:
      return "bye";
  }
  return "unknown";
}

void put_u32(uint8_t* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

void put_u64(uint8_t* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint32_t get_u32(const uint8_t* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(in[i]) << (8 * i);
  return value;
}

uint64_t get_u64(const uint8_t* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

Encoder& Encoder::u32(uint32_t value) {
  uint8_t raw[4];
  put_u32(raw, value);
  out_.insert(out_.end(), raw, raw + 4);
  return *this;
}

Encoder& Encoder::u64(uint64_t value) {
  uint8_t raw[8];
  put_u64(raw, value);
  out_.insert(out_.end(), raw, raw + 8);
  return *this;
}

Encoder& Encoder::str(const std::string& value) {
  u32(static_cast<uint32_t>(value.size()));
  return bytes(reinterpret_cast<const uint8_t*>(value.data()), value.size());
}

Encoder& Encoder::bytes(const uint8_t* data, size_t size) {
  out_.insert(out_.end(), data, data + size);
  return *this;
}

const uint8_t* Decoder::bytes(size_t size) {
  if (!ok_ || static_cast<size_t>(end_ - at_) < size) {
    ok_ = false;
    return nullptr;
  }
  const uint8_t* span = at_;
  at_ += size;
  return span;
}

uint32_t Decoder::u32() {
  const uint8_t* raw = bytes(4);
  return raw ? get_u32(raw) : 0;
}

uint64_t Decoder::u64() {
  const uint8_t* raw = bytes(8);
  return raw ? get_u64(raw) : 0;
}

std::string Decoder::str() {
  uint32_t size = u32();
  const uint8_t* raw = bytes(size);
  return raw ? std::string(reinterpret_cast<const char*>(raw), size) : "";
}

std::vector<uint8_t> encode(const Hello& hello) {
  std::vector<uint8_t> out;
  Encoder(out)
      .u32(hello.magic)
      .u32(hello.version)
      .u32(static_cast<uint32_t>(hello.rank))
      .u32(static_cast<uint32_t>(hello.size))
      .u64(hello.epoch)
      .u64(hello.token)
      .str(hello.job_id)
      .str(hello.host);
  return out;
}

bool decode(const uint8_t* data, size_t size, Hello* hello) {
  Decoder in(data, size);
  hello->magic = in.u32();
  hello->version = in.u32();
  hello->rank = static_cast<int32_t>(in.u32());
  hello->size = static_cast<int32_t>(in.u32());
  hello->epoch = in.u64();
  hello->token = in.u64();
  hello->job_id = in.str();
  hello->host = in.str();
  return in.done();
}

std::vector<uint8_t> encode(const Welcome& welcome) {
  std::vector<uint8_t> out;
  Encoder(out).u32(static_cast<uint32_t>(welcome.rank)).str(welcome.host);
  return out;
}

bool decode(const uint8_t* data, size_t size, Welcome* welcome) {
  Decoder in(data, size);
  welcome->rank = static_cast<int32_t>(in.u32());
  welcome->host = in.str();
  return in.done();
}

std::vector<uint8_t> encode(const FailureNote& note) {
  std::vector<uint8_t> out;
  Encoder(out)
      .u32(static_cast<uint32_t>(note.rank))
      .str(note.host)
      .str(note.reason);
  return out;
}

bool decode(const uint8_t* data, size_t size, FailureNote* note) {
  Decoder in(data, size);
  note->rank = static_cast<int32_t>(in.u32());
  note->host = in.str();
  note->reason = in.str();
  return in.done();
}

void append_gather_entry(std::vector<uint8_t>& bundle, int rank,
                         const uint8_t* data, size_t size) {
  size_t at = bundle.size();
  bundle.resize(at + 8 + size);
  put_u32(bundle.data() + at, static_cast<uint32_t>(rank));
  put_u32(bundle.data() + at + 4, static_cast<uint32_t>(size));
  if (size > 0) std::memcpy(bundle.data() + at + 8, data, size);
}

namespace {
constexpr size_t kReadChunk = 64 * 1024;
}

FrameReader::FrameReader() : buffer_(kReadChunk) {}

ssize_t FrameReader::read_from(int fd) {
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (buffer_.size() - end_ < kReadChunk / 4) {
    // Make room: move the unparsed tail to the front, and grow when a frame
    // in progress is larger than the buffer.
    size_t need = end_ - begin_;
    if (need >= kFrameHeaderSize) {
      size_t frame = kFrameHeaderSize + get_u32(buffer_.data() + begin_);
      if (frame <= kFrameHeaderSize + kMaxFramePayload && frame > need)
        need = frame;
    }
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (buffer_.size() < need + kReadChunk / 4)
      buffer_.resize(need + kReadChunk);
  }
  for (;;) {
    ssize_t n =
        recv(fd, buffer_.data() + end_, buffer_.size() - end_, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) end_ += static_cast<size_t>(n);
    return n;
  }
}

bool FrameReader::next(FrameType* type, const uint8_t** payload, uint32_t* size,
                       bool* bad) {
  *bad = false;
  size_t have = end_ - begin_;
  if (have < kFrameHeaderSize) return false;
  const uint8_t* header = buffer_.data() + begin_;
  uint32_t length = get_u32(header);
  if (length > kMaxFramePayload) {
    *bad = true;
    return false;
  }
  if (have < kFrameHeaderSize + length) return false;
  *type = static_cast<FrameType>(get_u32(header + 4));
  *payload = header + kFrameHeaderSize;
  *size = length;
  begin_ += kFrameHeaderSize + length;
  return true;
}

bool FrameWriter::send(int fd, FrameType type, const Part* parts,
                       size_t count) {
  uint8_t header[kFrameHeaderSize];
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += parts[i].size;
  put_u32(header, static_cast<uint32_t>(total));
  put_u32(header + 4, static_cast<uint32_t>(type));
  last_written_ = 0;

  constexpr size_t kMaxParts = 8;
  if (pending() || count > kMaxParts) {
    // Keep order behind what the socket has not taken yet.
    queued_.insert(queued_.end(), header, header + kFrameHeaderSize);
    for (size_t i = 0; i < count; ++i) {
      auto* data = static_cast<const uint8_t*>(parts[i].data);
      queued_.insert(queued_.end(), data, data + parts[i].size);
    }
    return flush(fd);
  }

  iovec iov[kMaxParts + 1];
  iov[0] = {header, kFrameHeaderSize};
  size_t n_iov = 1;
  for (size_t i = 0; i < count; ++i)
    if (parts[i].size > 0)
      iov[n_iov++] = {const_cast<void*>(parts[i].data), parts[i].size};
  msghdr message{};
  message.msg_iov = iov;
  message.msg_iovlen = n_iov;
  ssize_t n;
  do {
    n = sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
  size_t written = n > 0 ? static_cast<size_t>(n) : 0;
  last_written_ = written;

  // Keep whatever the socket did not take.
  queued_.clear();
  sent_ = 0;
  size_t offset = 0;
  for (size_t i = 0; i < n_iov; ++i) {
    auto* data = static_cast<const uint8_t*>(iov[i].iov_base);
    size_t len = iov[i].iov_len;
    if (offset + len > written) {
      size_t skip = written > offset ? written - offset : 0;
      queued_.insert(queued_.end(), data + skip, data + len);
    }
    offset += len;
  }
  return true;
}

bool FrameWriter::flush(int fd) {
  last_written_ = 0;
  while (pending()) {
    ssize_t n = ::send(fd, queued_.data() + sent_, queued_.size() - sent_,
                       MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      return false;
    }
    sent_ += static_cast<size_t>(n);
    last_written_ += static_cast<size_t>(n);
  }
  queued_.clear();
  sent_ = 0;
  return true;
}

}  // namespace hvd::control
