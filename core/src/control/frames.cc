#include "control/frames.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

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
    case FrameType::summon:
      return "summon";
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
  return in.done() && note->host.size() <= kMaxNoteText &&
         note->reason.size() <= kMaxNoteText;
}

void append_gather_entry(std::vector<uint8_t>& bundle, int rank,
                         const uint8_t* data, size_t size) {
  size_t at = bundle.size();
  bundle.resize(at + 8 + size);
  put_u32(bundle.data() + at, static_cast<uint32_t>(rank));
  put_u32(bundle.data() + at + 4, static_cast<uint32_t>(size));
  if (size > 0) std::memcpy(bundle.data() + at + 8, data, size);
}

bool decode_gather_bundle(const uint8_t* data, size_t size, int world_size,
                          std::vector<std::vector<uint8_t>>* by_rank) {
  if (world_size <= 0) return false;
  by_rank->assign(static_cast<size_t>(world_size), {});
  std::vector<bool> seen(static_cast<size_t>(world_size), false);
  Decoder entries(data, size);
  for (int n = 0; n < world_size; ++n) {
    uint32_t rank = entries.u32();
    uint32_t length = entries.u32();
    const uint8_t* bytes = entries.bytes(length);
    if (!entries.ok() || rank >= static_cast<uint32_t>(world_size) ||
        seen[rank])
      return false;
    seen[rank] = true;
    (*by_rank)[rank].assign(bytes, bytes + length);
  }
  return entries.done();
}

std::vector<uint8_t> encode(const HostTable& table) {
  std::vector<uint8_t> out;
  Encoder encoder(out);
  encoder.u32(static_cast<uint32_t>(table.names.size()));
  for (const auto& name : table.names) encoder.str(name);
  encoder.u32(static_cast<uint32_t>(table.index.size()));
  for (uint32_t i : table.index) encoder.u32(i);
  return out;
}

bool decode(const uint8_t* data, size_t size, int world_size,
            HostTable* table) {
  if (world_size <= 0) return false;
  Decoder in(data, size);
  // No more names than ranks; each read is checked against what is left, so
  // a large count costs nothing before it fails.
  uint32_t names = in.u32();
  if (names > static_cast<uint32_t>(world_size)) return false;
  table->names.clear();
  for (uint32_t n = 0; in.ok() && n < names; ++n)
    table->names.push_back(in.str());
  if (in.u32() != static_cast<uint32_t>(world_size)) return false;
  table->index.clear();
  for (int n = 0; in.ok() && n < world_size; ++n) {
    uint32_t i = in.u32();
    if (i >= table->names.size()) return false;
    table->index.push_back(i);
  }
  return in.done();
}

namespace {
constexpr size_t kReadChunk = 64 * 1024;
}

FrameReader::FrameReader(uint32_t max_payload)
    : buffer_(kReadChunk), max_payload_(max_payload) {}

ssize_t FrameReader::read_from(int fd) {
  size_t room;
  uint8_t* at = space(&room);
  for (;;) {
    ssize_t n = recv(fd, at, room, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) commit(static_cast<size_t>(n));
    return n;
  }
}

uint8_t* FrameReader::space(size_t* room) {
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (buffer_.size() - end_ < kReadChunk / 4) {
    // Make room: move the unparsed tail to the front, and grow when a frame
    // in progress is larger than the buffer: to the frame, though never past
    // twice what has arrived of it, so a header alone cannot make the reader
    // allocate what the peer never sends.
    const size_t have = end_ - begin_;
    size_t need = have;
    if (have >= kFrameHeaderSize) {
      size_t frame = kFrameHeaderSize + get_u32(buffer_.data() + begin_);
      if (frame <= kFrameHeaderSize + max_payload_ && frame > have)
        need = std::min(frame, 2 * have);
    }
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (buffer_.size() < need + kReadChunk / 4)
      buffer_.resize(need + kReadChunk);
  }
  *room = buffer_.size() - end_;
  return buffer_.data() + end_;
}

void FrameReader::commit(size_t n) { end_ += n; }

std::string FrameReader::why_bad() const {
  return "a frame of " + std::to_string(refused_length_) +
         " bytes, over the limit of " + std::to_string(max_payload_);
}

bool FrameReader::next(FrameType* type, const uint8_t** payload, uint32_t* size,
                       bool* bad) {
  *bad = false;
  size_t have = end_ - begin_;
  if (have < kFrameHeaderSize) return false;
  const uint8_t* header = buffer_.data() + begin_;
  uint32_t length = get_u32(header);
  if (length > max_payload_) {
    refused_length_ = length;
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
