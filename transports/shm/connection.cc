// The data path of a shm connection: frames through the rings, matching,
// rendezvous copies, one-sided copies, failure.
#include "connection.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/host_access.h"
#include "copy.h"
#include "horovod_plugin/boundary.h"
#include "names.h"
#include "unix_socket.h"

namespace hvd_shm {

using hvd_plugin::Failure;
using hvd_plugin::refuse;

namespace {

// Bytes a rendezvous, put or get copies per pass, so one large copy does not
// hold up the other connections.
constexpr uint64_t kCopyChunk = 1u << 20;
// Peers' segments kept mapped for rendezvous receives, per connection.
constexpr size_t kRendezvousMaps = 64;

}  // namespace

Connection::~Connection() {
  if (watched_) t_.unwatch(socket_);
  if (socket_ >= 0) ::close(socket_);
  if (peer_wake_fd_ >= 0) ::close(peer_wake_fd_);
  drop_unexpected();
}

hvd_status Connection::refusal() const {
  if (state_ == State::kFailed) return refuse(status_, error_);
  return refuse(HVD_ERR_INVALID_ARGUMENT,
                "the connection is not established yet (conn_test has not "
                "returned HVD_OK)");
}

// ---- posting ---------------------------------------------------------------

hvd_status Connection::isend(const void* buf, size_t bytes, uint64_t tag,
                             const MemoryRegion* mr, Request** out) {
  if (!usable()) return refusal();
  if (bytes > 0 && buf == nullptr) {
    return refuse(HVD_ERR_INVALID_ARGUMENT, "isend: NULL buffer");
  }
  if (sends_pending_ >= t_.options().max_requests) return HVD_AGAIN;
  Request* r = t_.new_request(RequestKind::kSend, this);
  r->buf = static_cast<uint8_t*>(const_cast<void*>(buf));
  r->bytes = bytes;
  r->tag = tag;
  if (bytes >= t_.options().rendezvous_threshold &&
      t_.locate(buf, bytes, mr, &r->segment, &r->offset)) {
    r->rendezvous = true;
    r->cookie = next_cookie_++;
  }
  active_.push_back(r);
  send_queue_.push_back(r);
  ++sends_pending_;
  *out = r;
  if (send_queue_.front() == r) tx_progress();
  return HVD_OK;
}

hvd_status Connection::irecv(void* buf, size_t bytes, uint64_t tag,
                             Request** out) {
  if (state_ != State::kEstablished && state_ != State::kFailed) {
    return refusal();
  }
  if (bytes > 0 && buf == nullptr) {
    return refuse(HVD_ERR_INVALID_ARGUMENT, "irecv: NULL buffer");
  }
  Unexpected* u = unexpected_.find(
      [&](Unexpected* x) { return x->tag == tag && x->matched == nullptr; });
  // A failed connection still hands out what arrived whole before it failed.
  if (state_ == State::kFailed && (u == nullptr || !u->complete)) {
    return refusal();
  }
  if (recvs_pending_ >= t_.options().max_requests) return HVD_AGAIN;
  Request* r = t_.new_request(RequestKind::kRecv, this);
  r->buf = static_cast<uint8_t*>(buf);
  r->bytes = bytes;
  r->tag = tag;
  active_.push_back(r);
  ++recvs_pending_;
  *out = r;
  if (u != nullptr && u->rendezvous) {
    unexpected_.remove(u);
    begin_rendezvous(r, u->length, u->segment, u->offset, u->cookie);
    delete u;
  } else if (u != nullptr && u->complete) {
    deliver(u, r);
  } else if (u != nullptr) {
    u->matched = r;
  } else {
    posted_.push_back(r);
    rx_progress();
  }
  return HVD_OK;
}

hvd_status Connection::iput(const void* src, RemoteRegion* dst, uint64_t offset,
                            size_t bytes, Request** out) {
  if (!usable()) return refusal();
  if (offset > dst->bytes || bytes > dst->bytes - offset) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "iput of " + std::to_string(bytes) + " bytes at offset " +
                      std::to_string(offset) + " overruns a region of " +
                      std::to_string(dst->bytes) + " bytes");
  }
  Request* r = t_.new_request(RequestKind::kPut, this);
  r->copy_src = static_cast<const uint8_t*>(src);
  r->copy_dst = dst->base + offset;
  r->copy_total = bytes;
  r->bytes = bytes;
  r->streaming = bytes >= t_.options().streaming_threshold;
  active_.push_back(r);
  copies_.push_back(r);
  *out = r;
  return HVD_OK;
}

hvd_status Connection::iget(void* dst, RemoteRegion* src, uint64_t offset,
                            size_t bytes, Request** out) {
  if (!usable()) return refusal();
  if (offset > src->bytes || bytes > src->bytes - offset) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "iget of " + std::to_string(bytes) + " bytes at offset " +
                      std::to_string(offset) + " overruns a region of " +
                      std::to_string(src->bytes) + " bytes");
  }
  Request* r = t_.new_request(RequestKind::kGet, this);
  r->copy_src = src->base + offset;
  r->copy_dst = static_cast<uint8_t*>(dst);
  r->copy_total = bytes;
  r->bytes = bytes;
  r->streaming = bytes >= t_.options().streaming_threshold;
  active_.push_back(r);
  copies_.push_back(r);
  *out = r;
  return HVD_OK;
}

hvd_status Connection::import(const void* key, size_t key_bytes,
                              RemoteRegion** out) {
  if (!usable()) return refusal();
  MemoryKey k{};
  if (key == nullptr || key_bytes < sizeof(k)) {
    return refuse(HVD_ERR_INVALID_ARGUMENT, "mr_import: key too short");
  }
  std::memcpy(&k, key, sizeof(k));
  if (k.magic != kKeyMagic) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "mr_import: not a key of the shm transport");
  }
  if (strncmp(k.boot_id, boot_id().c_str(), sizeof(k.boot_id)) != 0) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "mr_import: the memory is on another host");
  }
  std::string prefix(k.prefix, strnlen(k.prefix, sizeof(k.prefix)));
  std::shared_ptr<Segment> map =
      t_.map_peer_segment(memory_segment_name(prefix, k.segment));
  if (k.offset > map->size() || k.bytes > map->size() - k.offset) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "mr_import: the key names bytes beyond " + map->name());
  }
  auto* region = new RemoteRegion;
  region->conn = this;
  region->mapping = map;
  region->base = static_cast<uint8_t*>(map->base()) + k.offset;
  region->bytes = k.bytes;
  *out = region;
  return HVD_OK;
}

// ---- progress --------------------------------------------------------------

bool Connection::progress() {
  if (state_ != State::kEstablished) return false;
  bool moved = rx_progress();
  if (!copies_.empty()) moved = copy_progress() || moved;
  if (state_ == State::kEstablished &&
      (!send_queue_.empty() || control_sent_ < control_.size())) {
    moved = tx_progress() || moved;
  }
  return moved;
}

bool Connection::work_ready() {
  if (state_ != State::kEstablished) return false;
  if (!copies_.empty()) return true;
  uint64_t want = rx_active_ ? 1 : sizeof(FrameHeader);
  uint64_t ready = reader_.available(want);
  if (ready == UINT64_MAX || ready >= want) return true;
  Request* front = send_queue_.front();
  bool mid_frame = front != nullptr && front->header_sent;
  if (mid_frame) return writer_.space(1) >= 1;
  if (control_sent_ < control_.size() || front != nullptr) {
    return writer_.space(sizeof(FrameHeader)) >= sizeof(FrameHeader);
  }
  return false;
}

void Connection::set_sleeping(bool sleeping) {
  if (header_ == nullptr) return;
  header_->sleeping[side_].value.store(sleeping ? 1 : 0,
                                       std::memory_order_relaxed);
}

void Connection::notify_peer() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::atomic<uint32_t>& flag = header_->sleeping[1 - side_].value;
  if (flag.load(std::memory_order_relaxed) != 0 && flag.exchange(0) != 0) {
    uint64_t one = 1;
    ssize_t n = ::write(peer_wake_fd_, &one, sizeof(one));
    (void)n;  // EAGAIN: the counter is full, so the peer is awake anyway
  }
}

bool Connection::rx_progress() {
  bool moved = false;
  uint64_t budget = header_->ring_bytes;
  while (state_ == State::kEstablished && budget > 0) {
    if (!rx_active_) {
      uint64_t ready = reader_.available(sizeof(FrameHeader));
      if (ready == UINT64_MAX) {
        protocol_error("ring index out of range");
        return true;
      }
      if (ready < sizeof(FrameHeader)) break;
      FrameHeader frame;
      reader_.read(&frame, sizeof(frame), copy_bytes, false);
      budget -= std::min<uint64_t>(budget, sizeof(frame));
      moved = true;
      on_frame(frame);
      continue;
    }
    uint64_t ready = reader_.available(std::min(rx_remaining_, chunk_));
    if (ready == UINT64_MAX) {
      protocol_error("ring index out of range");
      return true;
    }
    uint64_t n = std::min({ready, rx_remaining_, chunk_, budget});
    if (n == 0) break;
    reader_.read(rx_target_ != nullptr ? rx_target_ + rx_offset_ : nullptr, n,
                 copy_bytes, rx_streaming_);
    rx_offset_ += n;
    rx_remaining_ -= n;
    budget -= n;
    moved = true;
    if (rx_remaining_ == 0) {
      finish_payload();
    } else if (reader_.release()) {
      notify_peer();  // the sender refills while this side copies on
    }
  }
  if (reader_.release()) notify_peer();
  return moved;
}

void Connection::on_frame(const FrameHeader& frame) {
  switch (frame.type) {
    case kData:
      begin_data(frame);
      return;
    case kRendezvous: {
      Request* r =
          posted_.find([&](Request* x) { return x->tag == frame.tag; });
      if (r != nullptr) {
        posted_.remove(r);
        begin_rendezvous(r, frame.length, frame.segment, frame.offset,
                         frame.cookie);
        return;
      }
      auto* u = new Unexpected;
      u->tag = frame.tag;
      u->length = frame.length;
      u->rendezvous = true;
      u->segment = frame.segment;
      u->offset = frame.offset;
      u->cookie = frame.cookie;
      unexpected_.push_back(u);
      return;
    }
    case kAck: {
      Request* s = awaiting_ack_.find(
          [&](Request* x) { return x->cookie == frame.cookie; });
      if (s == nullptr) {
        protocol_error("acknowledgement of an unknown send");
        return;
      }
      awaiting_ack_.remove(s);
      --sends_pending_;
      complete(s, static_cast<hvd_status>(static_cast<int32_t>(frame.reserved)),
               s->bytes);
      return;
    }
    default:
      protocol_error("unknown frame type " + std::to_string(frame.type));
  }
}

void Connection::begin_data(const FrameHeader& frame) {
  rx_active_ = true;
  rx_remaining_ = frame.length;
  rx_offset_ = 0;
  rx_streaming_ = frame.length >= t_.options().streaming_threshold;
  rx_target_ = nullptr;
  rx_recv_ = nullptr;
  rx_unexpected_ = nullptr;
  Request* r = posted_.find([&](Request* x) { return x->tag == frame.tag; });
  if (r != nullptr) {
    posted_.remove(r);
    rx_recv_ = r;
    r->message_bytes = frame.length;
    if (frame.length <= r->bytes) rx_target_ = r->buf;
  } else {
    auto* u = new Unexpected;
    u->tag = frame.tag;
    u->length = frame.length;
    if (frame.length > 0) {
      u->data = static_cast<uint8_t*>(std::malloc(frame.length));
      if (u->data == nullptr) {
        delete u;
        fail(HVD_ERR_OUT_OF_MEMORY, -1,
             "no memory for an unexpected message of " +
                 std::to_string(frame.length) + " bytes from rank " +
                 std::to_string(peer_rank_));
        return;
      }
    }
    unexpected_.push_back(u);
    rx_unexpected_ = u;
    rx_target_ = u->data;
  }
  if (frame.length == 0) finish_payload();
}

void Connection::finish_payload() {
  rx_active_ = false;
  if (Request* r = rx_recv_) {
    rx_recv_ = nullptr;
    --recvs_pending_;
    complete(r, r->message_bytes > r->bytes ? HVD_ERR_TRUNCATED : HVD_OK,
             r->message_bytes);
  } else if (Unexpected* u = rx_unexpected_) {
    rx_unexpected_ = nullptr;
    u->complete = true;
    if (u->matched != nullptr) deliver(u, u->matched);
  }
}

void Connection::deliver(Unexpected* u, Request* recv) {
  unexpected_.remove(u);
  uint64_t length = u->length;
  hvd_status status = HVD_OK;
  if (length > recv->bytes) {
    status = HVD_ERR_TRUNCATED;
  } else if (length > 0) {
    copy_bytes(recv->buf, u->data, length,
               length >= t_.options().streaming_threshold);
  }
  std::free(u->data);
  delete u;
  recv->message_bytes = length;
  --recvs_pending_;
  complete(recv, status, length);
}

void Connection::begin_rendezvous(Request* recv, uint64_t length,
                                  uint64_t segment, uint64_t offset,
                                  uint64_t cookie) {
  recv->message_bytes = length;
  if (length > recv->bytes) {
    send_ack(cookie, HVD_OK);
    --recvs_pending_;
    complete(recv, HVD_ERR_TRUNCATED, length);
    return;
  }
  std::shared_ptr<Segment>& map = rendezvous_maps_[segment];
  if (map == nullptr) {
    try {
      map = t_.map_peer_segment(memory_segment_name(peer_prefix_, segment));
    } catch (const Failure& f) {
      rendezvous_maps_.erase(segment);
      hvd_transport_common::log(
          t_.host(), HVD_LOG_WARNING,
          "receive from rank " + std::to_string(peer_rank_) + ": " + f.what());
      send_ack(cookie, f.status());
      --recvs_pending_;
      complete(recv, f.status(), 0);
      return;
    }
    if (rendezvous_maps_.size() > kRendezvousMaps) {
      rendezvous_maps_.erase(rendezvous_maps_.begin());
    }
  }
  if (offset > map->size() || length > map->size() - offset) {
    protocol_error("a rendezvous beyond the end of " + map->name());
    return;
  }
  recv->copy_src = static_cast<const uint8_t*>(map->base()) + offset;
  recv->copy_dst = recv->buf;
  recv->copy_total = length;
  recv->done = 0;
  recv->cookie = cookie;
  recv->streaming = length >= t_.options().streaming_threshold;
  copies_.push_back(recv);
}

bool Connection::copy_progress() {
  bool moved = false;
  for (Request* r = copies_.front(); r != nullptr;) {
    Request* next = RequestQueue::next(r);
    uint64_t n = std::min(kCopyChunk, r->copy_total - r->done);
    if (n > 0)
      copy_bytes(r->copy_dst + r->done, r->copy_src + r->done, n, r->streaming);
    r->done += n;
    moved = true;
    if (r->done == r->copy_total) {
      copies_.remove(r);
      if (r->kind == RequestKind::kRecv) {
        send_ack(r->cookie, HVD_OK);
        --recvs_pending_;
        complete(r, HVD_OK, r->message_bytes);
      } else {
        complete(r, HVD_OK, r->copy_total);
      }
    }
    r = next;
  }
  return moved;
}

void Connection::send_ack(uint64_t cookie, hvd_status status) {
  FrameHeader ack{};
  ack.type = kAck;
  ack.reserved = static_cast<uint32_t>(status);
  ack.cookie = cookie;
  control_.push_back(ack);
}

bool Connection::tx_progress() {
  bool moved = false;
  uint64_t budget = header_->ring_bytes;
  while (budget > 0) {
    Request* r = send_queue_.front();
    bool mid_frame = r != nullptr && r->header_sent;
    if (!mid_frame && control_sent_ < control_.size()) {
      if (writer_.space(sizeof(FrameHeader)) < sizeof(FrameHeader)) break;
      writer_.write(&control_[control_sent_++], sizeof(FrameHeader));
      if (control_sent_ == control_.size()) {
        control_.clear();
        control_sent_ = 0;
      }
      moved = true;
      continue;
    }
    if (r == nullptr) break;
    if (!r->header_sent) {
      if (writer_.space(sizeof(FrameHeader)) < sizeof(FrameHeader)) break;
      FrameHeader frame{};
      frame.type = r->rendezvous ? kRendezvous : kData;
      frame.tag = r->tag;
      frame.length = r->bytes;
      frame.segment = r->segment;
      frame.offset = r->offset;
      frame.cookie = r->cookie;
      writer_.write(&frame, sizeof(frame));
      r->header_sent = true;
      moved = true;
      if (r->rendezvous) {
        send_queue_.pop_front();
        awaiting_ack_.push_back(r);
        continue;
      }
    }
    uint64_t want = std::min(r->bytes - r->done, chunk_);
    uint64_t n =
        std::min({writer_.space(want), r->bytes - r->done, chunk_, budget});
    if (n == 0 && r->done < r->bytes) break;
    if (n > 0) {
      writer_.write(r->buf + r->done, n);
      r->done += n;
      budget -= n;
      moved = true;
    }
    if (r->done == r->bytes) {
      send_queue_.pop_front();
      --sends_pending_;
      complete(r, HVD_OK, r->bytes);
    } else if (writer_.publish()) {
      notify_peer();  // the receiver copies out while this side copies in
    }
  }
  if (writer_.publish()) notify_peer();
  return moved;
}

// ---- completion and failure ------------------------------------------------

void Connection::complete(Request* req, hvd_status status, uint64_t bytes) {
  active_.remove(req);
  int32_t peer = -1;
  if (status != HVD_OK)
    peer = state_ == State::kFailed ? fail_peer_ : peer_rank_;
  t_.finish(req, status, peer, bytes);
}

void Connection::on_socket_event() {
  if (state_ != State::kEstablished) return;  // the handshake reads it
  char buf[64];
  int fds[4];
  int fd_count = 0;
  long n = 0;
  try {
    n = receive_message(socket_, buf, sizeof(buf), fds, 4, &fd_count);
  } catch (const Failure&) {
    n = 0;
  }
  for (int i = 0; i < fd_count; ++i) ::close(fds[i]);
  if (n < 0) return;
  // What the peer finished sending before it went is still delivered.
  progress();
  if (n == 0) {
    fail(HVD_ERR_PEER_FAILED, peer_rank_,
         "rank " + std::to_string(peer_rank_) +
             " closed the connection or exited");
  } else {
    protocol_error("unexpected message on the connection's socket");
  }
}

void Connection::protocol_error(const std::string& what) {
  fail(HVD_ERR_INTERNAL, peer_rank_,
       "protocol error on the connection with rank " +
           std::to_string(peer_rank_) + ": " + what);
}

void Connection::fail(hvd_status status, int32_t peer, const std::string& why) {
  if (state_ == State::kFailed) return;
  state_ = State::kFailed;
  status_ = status;
  fail_peer_ = peer;
  error_ = "shm: " + why;
  hvd_transport_common::log(t_.host(), HVD_LOG_DEBUG, error_);
  if (watched_) {
    t_.unwatch(socket_);
    watched_ = false;
  }
  send_queue_ = RequestQueue{};
  posted_ = RequestQueue{};
  awaiting_ack_ = RequestQueue{};
  copies_ = RequestQueue{};
  control_.clear();
  control_sent_ = 0;
  rx_active_ = false;
  rx_recv_ = nullptr;
  rx_unexpected_ = nullptr;
  for (Unexpected* u = unexpected_.front(); u != nullptr;) {
    Unexpected* next = UnexpectedQueue::next(u);
    u->matched = nullptr;
    if (!u->complete || u->rendezvous) {
      unexpected_.remove(u);
      std::free(u->data);
      delete u;
    }
    u = next;
  }
  while (Request* r = active_.front()) complete(r, status, 0);
  sends_pending_ = 0;
  recvs_pending_ = 0;
}

void Connection::shut_down() {
  fail(HVD_ERR_SHUT_DOWN, -1, "the connection was closed");
}

void Connection::drop_unexpected() {
  while (Unexpected* u = unexpected_.pop_front()) {
    std::free(u->data);
    delete u;
  }
}

}  // namespace hvd_shm
