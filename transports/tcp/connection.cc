// The data path of a tcp connection.
#include "connection.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/host_access.h"
#include "horovod_plugin/boundary.h"
#include "sockets.h"
#include "wire.h"

namespace hvd_tcp {

using hvd_plugin::refuse;

namespace {

// Bytes read from one stream per pass, so one busy stream does not hold up
// the others.
constexpr uint64_t kReadBudget = 4u << 20;
// Payloads at least this large are read straight into their destination
// instead of through the staging buffer.
constexpr uint64_t kDirectRead = 16u << 10;
// Bytes handed to one sendmsg.
constexpr uint64_t kWriteBatch = 8u << 20;

}  // namespace

// ---- posting ---------------------------------------------------------------

hvd_status Connection::isend(const void* buf, size_t bytes, uint64_t tag,
                             Request** out) {
  if (!usable()) return refusal();
  if (bytes > 0 && buf == nullptr) {
    return refuse(HVD_ERR_INVALID_ARGUMENT, "isend: NULL buffer");
  }
  if (sends_pending_ >= t_.options().max_requests) return HVD_AGAIN;
  Request* r = t_.new_request(true);
  r->buf = static_cast<uint8_t*>(const_cast<void*>(buf));
  r->bytes = bytes;
  r->tag = tag;
  const auto streams = static_cast<uint32_t>(streams_.size());
  uint64_t piece = bytes;
  uint32_t parts = 1;
  if (streams > 1 && bytes >= t_.options().split_threshold) {
    piece = part_bytes(bytes, streams);
    parts = static_cast<uint32_t>((bytes + piece - 1) / piece);
  }
  uint32_t seq = next_seq_++;
  r->parts_left = parts;
  active_.push_back(r);
  ++sends_pending_;
  *out = r;

  FrameHeader frame{tag, bytes, parts, seq};
  TxItem* first = t_.new_item();
  std::memcpy(first->header, &frame, sizeof(frame));
  first->header_bytes = sizeof(frame);
  first->payload = r->buf;
  first->payload_bytes = std::min(piece, bytes);
  first->owner = r;
  enqueue(streams_[0], first);
  for (uint32_t i = 1; i < parts; ++i) {
    uint64_t offset = i * piece;
    PartHeader part{seq, i, std::min(piece, bytes - offset)};
    TxItem* item = t_.new_item();
    std::memcpy(item->header, &part, sizeof(part));
    item->header_bytes = sizeof(part);
    item->payload = r->buf + offset;
    item->payload_bytes = part.bytes;
    item->owner = r;
    enqueue(streams_[i], item);
  }
  return HVD_OK;
}

void Connection::enqueue(Stream& s, TxItem* item) {
  bool idle = s.tx.empty();
  s.tx.push_back(item);
  if (idle && state_ == State::kEstablished) tx(s);  // the fast path
}

hvd_status Connection::irecv(void* buf, size_t bytes, uint64_t tag,
                             Request** out) {
  if (state_ == State::kSettingUp) return refusal();
  if (bytes > 0 && buf == nullptr) {
    return refuse(HVD_ERR_INVALID_ARGUMENT, "irecv: NULL buffer");
  }
  InMessage* m = unexpected_.find(
      [&](InMessage* x) { return x->tag == tag && x->matched == nullptr; });
  // A failed connection still hands out what arrived whole before it failed.
  if (state_ == State::kFailed && (m == nullptr || !m->complete)) {
    return refusal();
  }
  if (recvs_pending_ >= t_.options().max_requests) return HVD_AGAIN;
  Request* r = t_.new_request(false);
  r->buf = static_cast<uint8_t*>(buf);
  r->bytes = bytes;
  r->tag = tag;
  active_.push_back(r);
  ++recvs_pending_;
  *out = r;
  if (m != nullptr && m->complete) {
    deliver(m, r);
  } else if (m != nullptr) {
    m->matched = r;
  } else {
    posted_.push_back(r);
  }
  return HVD_OK;
}

// ---- events ----------------------------------------------------------------

void Connection::on_event(uint32_t index, uint32_t events) {
  if (state_ != State::kEstablished) return;
  Stream& s = streams_[index];
  if (events & EPOLLOUT) tx(s);
  if (state_ != State::kEstablished) return;
  if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))) return;
  if (index == 0) {
    rx_stream0();
  } else if (s.in_part || !s.expected.empty()) {
    rx_parts(s);
  } else if (at_end(s.fd)) {
    // Data waiting here belongs to a message whose header stream 0 has not
    // delivered yet; only the end of the stream is news.
    peer_gone(s, -2);
  }
}

void Connection::set_interest(Stream& s) {
  if (s.fd < 0 || state_ != State::kEstablished) return;
  uint32_t want = 0;
  if (!s.ended) {
    want = EPOLLRDHUP;
    if (s.index == 0 || s.in_part || !s.expected.empty()) want |= EPOLLIN;
  }
  if (!s.tx.empty()) want |= EPOLLOUT;
  if (want == 0) {
    unwatch(s);
    return;
  }
  if (!s.watched) {
    t_.watch(s.fd, &s.source, want);
    s.watched = true;
  } else if (want != s.interest) {
    t_.modify(s.fd, &s.source, want);
  }
  s.interest = want;
}

// ---- receiving -------------------------------------------------------------

bool Connection::rx_stream0() {
  Stream& s = streams_[0];
  if (s.ended) return false;
  uint8_t* staging = staging_.get();
  const size_t capacity = Transport::kScratchBytes;
  uint64_t budget = kReadBudget;
  bool moved = false;
  while (state_ == State::kEstablished) {
    size_t staged = staged_end_ - staged_begin_;
    if (rx_message_ == nullptr) {
      if (staged >= sizeof(FrameHeader)) {
        FrameHeader frame;
        std::memcpy(&frame, staging + staged_begin_, sizeof(frame));
        staged_begin_ += sizeof(frame);
        moved = true;
        on_header(frame);
        continue;
      }
      if (budget == 0) break;
      std::memmove(staging, staging + staged_begin_, staged);
      staged_begin_ = 0;
      staged_end_ = staged;
      long n = recv_some(s.fd, staging + staged_end_, capacity - staged_end_);
      if (n < 0) {
        peer_gone(s, n);
        return moved;
      }
      if (n == 0) break;
      staged_end_ += static_cast<size_t>(n);
      budget -= std::min<uint64_t>(budget, static_cast<uint64_t>(n));
      moved = true;
      continue;
    }
    if (rx_remaining_ == 0) {
      InMessage* m = rx_message_;
      rx_message_ = nullptr;
      part_done(m);
      continue;
    }
    uint8_t* target = rx_message_->target(rx_offset_);
    if (staged > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(staged, rx_remaining_));
      if (target != nullptr) std::memcpy(target, staging + staged_begin_, n);
      staged_begin_ += n;
      rx_offset_ += n;
      rx_remaining_ -= n;
      moved = true;
      continue;
    }
    if (budget == 0) break;
    long n;
    if (rx_remaining_ >= kDirectRead) {
      size_t want = static_cast<size_t>(
          target != nullptr ? rx_remaining_
                            : std::min<uint64_t>(rx_remaining_, capacity));
      n = recv_some(s.fd, target != nullptr ? target : t_.scratch(), want);
      if (n > 0) {
        rx_offset_ += static_cast<uint64_t>(n);
        rx_remaining_ -= static_cast<uint64_t>(n);
      }
    } else {
      staged_begin_ = staged_end_ = 0;
      n = recv_some(s.fd, staging, capacity);
      if (n > 0) staged_end_ = static_cast<size_t>(n);
    }
    if (n < 0) {
      peer_gone(s, n);
      return moved;
    }
    if (n == 0) break;
    budget -= std::min<uint64_t>(budget, static_cast<uint64_t>(n));
    moved = true;
  }
  return moved;
}

void Connection::on_header(const FrameHeader& frame) {
  uint64_t piece = 0;
  std::string problem = header_problem(
      frame, static_cast<uint32_t>(streams_.size()), expect_seq_, &piece);
  if (!problem.empty()) {
    protocol_error(problem);
    return;
  }
  ++expect_seq_;
  InMessage* m = t_.new_message();
  m->tag = frame.tag;
  m->length = frame.length;
  m->parts_left = frame.parts;
  Request* r = posted_.find([&](Request* x) { return x->tag == frame.tag; });
  t_.count_arrival(frame.length, r == nullptr);
  if (r != nullptr) {
    posted_.remove(r);
    m->recv = r;
    r->message = m;
    m->truncated = frame.length > r->bytes;
  } else {
    if (frame.length > 0) {
      if (!t_.give_buffer(m, frame.length)) {
        t_.free_message(m);
        fail(HVD_ERR_OUT_OF_MEMORY, -1,
             "no memory for an unexpected message of " +
                 std::to_string(frame.length) + " bytes from rank " +
                 std::to_string(peer_rank_));
        return;
      }
    }
    unexpected_.push_back(m);
  }
  arriving_.push_back(m);
  for (uint32_t i = 1; i < frame.parts; ++i) {
    uint64_t offset = i * piece;
    Stream& s = streams_[i];
    s.expected.push_back(
        Part{m, frame.seq, i, offset, std::min(piece, frame.length - offset)});
    set_interest(s);
  }
  rx_message_ = m;
  rx_offset_ = 0;
  rx_remaining_ = std::min(piece, frame.length);
  for (uint32_t i = 1; i < frame.parts; ++i) {
    // The peer closed that stream before sending this part.
    if (streams_[i].ended) return peer_gone(streams_[i], -2);
  }
}

bool Connection::rx_parts(Stream& s) {
  if (s.ended) return false;
  uint64_t budget = kReadBudget;
  bool moved = false;
  while (state_ == State::kEstablished) {
    if (!s.in_part) {
      if (s.expected.empty()) break;
      long n = recv_some(
          s.fd, reinterpret_cast<uint8_t*>(&s.part_header) + s.part_header_got,
          sizeof(PartHeader) - s.part_header_got);
      if (n < 0) {
        peer_gone(s, n);
        return moved;
      }
      if (n == 0) break;
      moved = true;
      s.part_header_got += static_cast<size_t>(n);
      if (s.part_header_got < sizeof(PartHeader)) continue;
      s.part_header_got = 0;
      s.current = s.expected.front();
      s.expected.pop_front();
      if (s.part_header.seq != s.current.seq ||
          s.part_header.index != s.current.index ||
          s.part_header.bytes != s.current.bytes) {
        protocol_error("stream " + std::to_string(s.index) +
                       " carries the wrong part");
        return true;
      }
      s.in_part = true;
      s.part_done = 0;
    }
    uint64_t left = s.current.bytes - s.part_done;
    if (left == 0) {
      s.in_part = false;
      part_done(s.current.message);
      continue;
    }
    if (budget == 0) break;
    uint8_t* target = s.current.message->target(s.current.offset + s.part_done);
    size_t want = static_cast<size_t>(
        target != nullptr ? left
                          : std::min<uint64_t>(left, Transport::kScratchBytes));
    long n = recv_some(s.fd, target != nullptr ? target : t_.scratch(), want);
    if (n < 0) {
      peer_gone(s, n);
      return moved;
    }
    if (n == 0) break;
    s.part_done += static_cast<uint64_t>(n);
    budget -= std::min<uint64_t>(budget, static_cast<uint64_t>(n));
    moved = true;
  }
  set_interest(s);
  end_if_drained();
  return moved;
}

void Connection::part_done(InMessage* m) {
  if (--m->parts_left > 0) return;
  arriving_.remove(m);
  if (Request* r = m->recv) {
    --recvs_pending_;
    hvd_status status = m->truncated ? HVD_ERR_TRUNCATED : HVD_OK;
    uint64_t length = m->length;
    t_.free_message(m);
    complete(r, status, length);
    return;
  }
  m->complete = true;
  if (m->matched != nullptr) deliver(m, m->matched);
}

void Connection::deliver(InMessage* m, Request* recv) {
  unexpected_.remove(m);
  uint64_t length = m->length;
  hvd_status status = HVD_OK;
  if (length > recv->bytes) {
    status = HVD_ERR_TRUNCATED;
  } else if (length > 0) {
    std::memcpy(recv->buf, m->data, length);
  }
  t_.free_message(m);
  --recvs_pending_;
  complete(recv, status, length);
}

// ---- sending ---------------------------------------------------------------

bool Connection::tx(Stream& s) {
  bool moved = false;
  while (!s.tx.empty() && state_ == State::kEstablished) {
    iovec iov[64];
    int count = 0;
    uint64_t batch = 0;
    for (TxItem* it = s.tx.front();
         it != nullptr && count < 62 && batch < kWriteBatch;
         it = TxQueue::next(it)) {
      uint64_t sent = it->sent;
      if (sent < it->header_bytes) {
        iov[count++] = {it->header + sent, it->header_bytes - sent};
        batch += it->header_bytes - sent;
        sent = it->header_bytes;
      }
      uint64_t done = sent - it->header_bytes;
      if (done < it->payload_bytes) {
        iov[count++] = {const_cast<uint8_t*>(it->payload) + done,
                        static_cast<size_t>(it->payload_bytes - done)};
        batch += it->payload_bytes - done;
      }
    }
    long n = send_some(s.fd, iov, count);
    if (n < 0) {
      peer_gone(s, n);
      return true;
    }
    if (n == 0) break;
    moved = true;
    auto left = static_cast<uint64_t>(n);
    while (left > 0) {
      TxItem* it = s.tx.front();
      uint64_t total = it->header_bytes + it->payload_bytes;
      uint64_t take = std::min(left, total - it->sent);
      it->sent += take;
      left -= take;
      if (it->sent < total) break;
      s.tx.pop_front();
      Request* r = it->owner;
      t_.free_item(it);
      if (--r->parts_left == 0) {
        --sends_pending_;
        complete(r, HVD_OK, r->bytes);
      }
    }
  }
  set_interest(s);
  return moved;
}

// ---- completion and failure ------------------------------------------------

void Connection::complete(Request* req, hvd_status status, uint64_t bytes) {
  active_.remove(req);
  int32_t peer = -1;
  if (status != HVD_OK) {
    peer = state_ == State::kFailed ? fail_peer_ : peer_rank_;
  }
  t_.finish(req, status, peer, bytes);
}

bool Connection::busy(const Stream& s) const {
  if (s.index == 0)
    return rx_message_ != nullptr || staged_end_ > staged_begin_;
  return s.in_part || !s.expected.empty() || s.part_header_got > 0;
}

void Connection::peer_gone(Stream& s, long result) {
  std::string how =
      result == -2 ? "closed the connection or exited"
                   : std::string("is unreachable: ") + std::strerror(errno);
  s.ended = true;
  if (draining_ || state_ != State::kEstablished) {
    if (state_ != State::kEstablished) {
      fail(HVD_ERR_PEER_FAILED, peer_rank_,
           "rank " + std::to_string(peer_rank_) + " " + how);
    }
    return;
  }
  if (result == -2 && !busy(s)) {
    // Closed between messages. The peer closes its streams one by one, and
    // parts it sent before may still be on their way on the others.
    set_interest(s);
    end_if_drained();
    return;
  }
  draining_ = true;
  for (bool moved = true; moved && state_ == State::kEstablished;) {
    moved = rx_stream0();
    for (size_t i = 1; i < streams_.size(); ++i) {
      Stream& other = streams_[i];
      if (other.in_part || !other.expected.empty()) {
        moved = rx_parts(other) || moved;
      }
    }
  }
  fail(HVD_ERR_PEER_FAILED, peer_rank_,
       "rank " + std::to_string(peer_rank_) + " " + how);
}

void Connection::end_if_drained() {
  if (state_ != State::kEstablished || !streams_[0].ended) return;
  for (const Stream& s : streams_) {
    if (busy(s)) return;
  }
  fail(HVD_ERR_PEER_FAILED, peer_rank_,
       "rank " + std::to_string(peer_rank_) +
           " closed the connection or exited");
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
  error_ = "tcp: " + why;
  hvd_transport_common::log(t_.host(), HVD_LOG_DEBUG, error_);
  for (Stream& s : streams_) {
    unwatch(s);
    while (TxItem* item = s.tx.pop_front()) t_.free_item(item);
    s.expected.clear();
    s.in_part = false;
  }
  posted_ = RequestQueue{};
  rx_message_ = nullptr;
  // Messages still arriving are lost; those that arrived whole stay for a
  // receive that asks for them.
  while (InMessage* m = arriving_.pop_front()) {
    if (UnexpectedMessages::linked(m)) unexpected_.remove(m);
    t_.free_message(m);
  }
  for (InMessage* m = unexpected_.front(); m != nullptr;
       m = UnexpectedMessages::next(m)) {
    m->matched = nullptr;
  }
  while (Request* r = active_.front()) complete(r, status, 0);
  sends_pending_ = 0;
  recvs_pending_ = 0;
}

void Connection::shut_down() {
  fail(HVD_ERR_SHUT_DOWN, -1, "the connection was closed");
}

}  // namespace hvd_tcp
