// Setting up a shm connection. The connecting side creates the segment and
// sends, in one message over the UNIX socket, who it is (rank, epoch) with
// the segment's and its own wake fd attached; the accepting side checks the
// epoch and rank, maps the segment and answers with its wake fd. Both remove
// the segment's name once they have it mapped, so nothing is left behind.
#include <unistd.h>

#include <cstring>

#include "connection.h"
#include "horovod_plugin/boundary.h"
#include "names.h"
#include "unix_socket.h"
#include "wire.h"

namespace hvd_shm {

using hvd_plugin::fail;
using hvd_plugin::Failure;

namespace {

void copy_string(char* dst, size_t capacity, const std::string& src) {
  if (src.size() + 1 > capacity) {
    fail(HVD_ERR_INTERNAL, "name too long for the handshake: " + src);
  }
  std::memcpy(dst, src.c_str(), src.size() + 1);
}

std::string bounded_string(const char* text, size_t capacity) {
  return std::string(text, strnlen(text, capacity));
}

}  // namespace

Connection::Connection(Transport& transport, const hvd_conn_info& info,
                       int side)
    : t_(transport),
      info_(info),
      side_(side),
      state_(side == 0 ? State::kSendHello : State::kAwaitHello),
      peer_rank_(info.peer_rank) {}

void Connection::start_connect(const Handle& handle) {
  socket_name_ = bounded_string(handle.socket_name, sizeof(handle.socket_name));
  size_t ring = t_.options().ring_bytes;
  segment_ = Segment::create(next_name('c'), segment_bytes(ring), true);
  init_segment(segment_->base(), ring);
  header_ = static_cast<SegmentHeader*>(segment_->base());
  socket_ = connect_socket(socket_name_);
  state_ = socket_ < 0 ? State::kConnectPending : State::kSendHello;
  if (socket_ >= 0) {
    t_.watch(socket_, &source_);
    watched_ = true;
  }
}

void Connection::start_accept(int socket_fd) {
  socket_ = socket_fd;
  t_.watch(socket_, &source_);
  watched_ = true;
  state_ = State::kAwaitHello;
}

Hello Connection::make_hello(uint16_t kind, hvd_status status) const {
  Hello h{};
  h.magic = kHandleMagic;
  h.version = kProtocolVersion;
  h.kind = kind;
  h.rank = info_.self_rank;
  h.expected_rank = info_.peer_rank;
  h.epoch = info_.epoch;
  h.status = status;
  h.pid = static_cast<uint32_t>(getpid());
  h.ring_bytes = t_.options().ring_bytes;
  copy_string(h.prefix, sizeof(h.prefix), name_prefix());
  if (kind == kHello)
    copy_string(h.segment, sizeof(h.segment), segment_->name());
  return h;
}

hvd_status Connection::handshake() {
  t_.aborted();  // applies a pending abort, which fails this connection
  if (state_ == State::kFailed) return refusal();
  try {
    if (state_ == State::kConnectPending) {
      socket_ = connect_socket(socket_name_);
      if (socket_ < 0) return HVD_AGAIN;
      t_.watch(socket_, &source_);
      watched_ = true;
      state_ = State::kSendHello;
    }
    if (state_ == State::kSendHello) send_hello();
    if (state_ == State::kAwaitReply) receive_reply();
    if (state_ == State::kAwaitHello) receive_hello();
    if (state_ == State::kSendReply) send_reply();
  } catch (const Failure& f) {
    if (state_ != State::kFailed) {
      fail(f.status(), f.status() == HVD_ERR_PEER_FAILED ? peer_rank_ : -1,
           f.what());
    }
  }
  if (state_ == State::kEstablished) return HVD_OK;
  if (state_ == State::kFailed) return refusal();
  return HVD_AGAIN;
}

void Connection::send_hello() {
  Hello h = make_hello(kHello, HVD_OK);
  int fds[2] = {segment_->fd(), t_.wake_fd()};
  if (send_message(socket_, &h, sizeof(h), fds, 2)) {
    state_ = State::kAwaitReply;
  }
}

void Connection::receive_reply() {
  Hello h{};
  int fds[4];
  int fd_count = 0;
  long n = receive_message(socket_, &h, sizeof(h), fds, 4, &fd_count);
  if (n < 0) return;
  if (n == 0) {
    fail(HVD_ERR_PEER_FAILED, peer_rank_,
         "the listener closed the connection during the handshake");
    return;
  }
  for (int i = 1; i < fd_count; ++i) ::close(fds[i]);
  if (fd_count > 0) peer_wake_fd_ = fds[0];
  std::string problem =
      hello_problem(h, static_cast<size_t>(n), kHelloReply);
  if (!problem.empty()) {
    fail(HVD_ERR_INTERNAL, peer_rank_,
         "unexpected handshake reply on @" + socket_name_ + ": " + problem);
    return;
  }
  if (h.status == HVD_ERR_EPOCH_MISMATCH) {
    fail(HVD_ERR_EPOCH_MISMATCH, h.rank,
         "rank " + std::to_string(h.rank) + " is at epoch " +
             std::to_string(h.epoch) + ", this rank at epoch " +
             std::to_string(info_.epoch));
    return;
  }
  if (h.status != HVD_OK) {
    fail(h.status, h.rank,
         "rank " + std::to_string(h.rank) + " refused the connection");
    return;
  }
  if (info_.peer_rank >= 0 && h.rank != info_.peer_rank) {
    fail(HVD_ERR_MISMATCH, h.rank,
         "connected to rank " + std::to_string(h.rank) + ", expected rank " +
             std::to_string(info_.peer_rank));
    return;
  }
  if (peer_wake_fd_ < 0) {
    fail(HVD_ERR_INTERNAL, h.rank, "handshake reply without a wake fd");
    return;
  }
  peer_rank_ = h.rank;
  peer_pid_ = h.pid;
  peer_prefix_ = bounded_string(h.prefix, sizeof(h.prefix));
  segment_->unlink();
  segment_->close_fd();
  attach_rings();
}

void Connection::receive_hello() {
  Hello h{};
  int fds[4];
  int fd_count = 0;
  long n = receive_message(socket_, &h, sizeof(h), fds, 4, &fd_count);
  if (n < 0) return;
  if (n == 0) {
    fail(HVD_ERR_PEER_FAILED, -1,
         "a connecting rank went away during the handshake");
    return;
  }
  for (int i = 2; i < fd_count; ++i) ::close(fds[i]);
  std::string problem = fd_count < 2
                            ? std::to_string(fd_count) + " fds, expected 2"
                            : hello_problem(h, static_cast<size_t>(n), kHello);
  if (!problem.empty()) {
    for (int i = 0; i < fd_count && i < 2; ++i) ::close(fds[i]);
    fail(HVD_ERR_INTERNAL, -1,
         "unexpected handshake message on a listener: " + problem);
    return;
  }
  peer_rank_ = h.rank;
  peer_pid_ = h.pid;
  peer_prefix_ = bounded_string(h.prefix, sizeof(h.prefix));
  peer_wake_fd_ = fds[1];
  std::string name = bounded_string(h.segment, sizeof(h.segment));
  segment_ = Segment::adopt(fds[0], name, segment_bytes(kMaxRingBytes));
  segment_->unlink();
  segment_->close_fd();
  if (h.epoch != info_.epoch) {
    Hello reply = make_hello(kHelloReply, HVD_ERR_EPOCH_MISMATCH);
    send_message(socket_, &reply, sizeof(reply), nullptr, 0);
    fail(HVD_ERR_EPOCH_MISMATCH, h.rank,
         "rank " + std::to_string(h.rank) + " connected at epoch " +
             std::to_string(h.epoch) + ", this rank is at epoch " +
             std::to_string(info_.epoch));
    return;
  }
  if (info_.peer_rank >= 0 && h.rank != info_.peer_rank) {
    Hello reply = make_hello(kHelloReply, HVD_ERR_MISMATCH);
    send_message(socket_, &reply, sizeof(reply), nullptr, 0);
    fail(HVD_ERR_MISMATCH, h.rank,
         "rank " + std::to_string(h.rank) + " connected, expected rank " +
             std::to_string(info_.peer_rank));
    return;
  }
  problem = segment_problem(segment_->base(), segment_->size(), h.ring_bytes);
  if (!problem.empty()) {
    fail(HVD_ERR_INTERNAL, h.rank,
         "the segment from rank " + std::to_string(h.rank) +
             " is malformed: " + problem);
    return;
  }
  header_ = static_cast<SegmentHeader*>(segment_->base());
  state_ = State::kSendReply;
}

void Connection::send_reply() {
  Hello reply = make_hello(kHelloReply, HVD_OK);
  int fds[1] = {t_.wake_fd()};
  if (send_message(socket_, &reply, sizeof(reply), fds, 1)) attach_rings();
}

void Connection::attach_rings() {
  uint64_t ring = header_->ring_bytes;
  auto* data = static_cast<uint8_t*>(segment_->base()) + header_->data_offset;
  writer_.attach(&header_->ring[side_], data + side_ * ring, ring);
  reader_.attach(&header_->ring[1 - side_], data + (1 - side_) * ring, ring);
  chunk_ = ring / 4;
  state_ = State::kEstablished;
  t_.established(this);
}

}  // namespace hvd_shm
