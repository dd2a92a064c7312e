#include "connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>

#include "common/host_access.h"
#include "horovod_plugin/status_text.h"
#include "transport.h"

namespace hvd_gloo {

namespace {

using Clock = std::chrono::steady_clock;

// How long the control thread waits for the next record of an idle peer.
// Failures end the wait early: a dead peer closes the socket; a hung one is
// the core's to detect (its heartbeat), and it aborts.
constexpr auto kIdleWait = std::chrono::hours(100);
// How long closing waits for the records still leaving.
constexpr auto kCloseLinger = std::chrono::seconds(2);

class SetupError : public std::exception {
 public:
  SetupError(hvd_status status, std::string what)
      : status_(status), what_(std::move(what)) {}
  hvd_status status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  hvd_status status_;
  std::string what_;
};

// Waits for `events` on `fd` until `deadline`, in slices, so that `stop`
// is noticed.
void await(int fd, short events, Clock::time_point deadline,
           const std::function<bool()>& stop, const char* what) {
  for (;;) {
    if (stop()) throw SetupError(HVD_ERR_SHUT_DOWN, "closed during set-up");
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) {
      throw SetupError(HVD_ERR_TIMEOUT, std::string("timed out ") + what);
    }
    pollfd p{fd, events, 0};
    int n =
        ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (n > 0) return;
    if (n < 0 && errno != EINTR) {
      throw SetupError(HVD_ERR_SYSTEM,
                       std::string("poll: ") + std::strerror(errno));
    }
  }
}

void write_all(int fd, const void* data, size_t bytes, Clock::time_point end,
               const std::function<bool()>& stop, const char* what) {
  auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      await(fd, POLLOUT, end, stop, what);
    } else {
      throw SetupError(HVD_ERR_PEER_FAILED,
                       std::string(what) + ": " + std::strerror(errno));
    }
  }
}

void read_all(int fd, void* data, size_t bytes, Clock::time_point end,
              const std::function<bool()>& stop, const char* what) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
    } else if (n == 0) {
      throw SetupError(HVD_ERR_PEER_FAILED,
                       std::string(what) + ": the peer closed the socket");
    } else if (errno == EAGAIN || errno == EINTR) {
      await(fd, POLLIN, end, stop, what);
    } else {
      throw SetupError(HVD_ERR_PEER_FAILED,
                       std::string(what) + ": " + std::strerror(errno));
    }
  }
}

}  // namespace

Connection::Connection(Transport& transport, Role role, int fd,
                       const Handle& handle, const hvd_conn_info& info)
    : transport_(transport),
      role_(role),
      fd_(fd),
      handle_(handle),
      info_(info),
      sends_in_flight_(std::make_shared<std::atomic<uint32_t>>(0)),
      recvs_in_flight_(std::make_shared<std::atomic<uint32_t>>(0)) {
  if (role == Role::kConnector) peer_rank_ = handle.rank;
  control_ = std::thread([this] { run_control(); });
}

Connection::~Connection() {
  {
    // Records still leaving go out first: a peer's send completes only on
    // the Received record this side sends once the bytes are in.
    std::unique_lock<std::mutex> lock(mu_);
    for (auto it = waits_.begin(); it != waits_.end();) {
      if (it->recv) {
        if (it->req != nullptr) finish(it->req, HVD_ERR_SHUT_DOWN, -1, 0);
        it->req = nullptr;
        graveyard_.push_back(std::move(*it));
        it = waits_.erase(it);
      } else {
        ++it;
      }
    }
    data_cv_.wait_for(lock, kCloseLinger, [&] {
      return !serving_ || failure_ != HVD_OK ||
             (waits_.empty() && in_hand_ == nullptr);
    });
    stopping_ = true;
    fail_locked(HVD_ERR_SHUT_DOWN, -1);
    for (auto& b : records_) {
      if (b) b->abortWaitRecv();
    }
    if (in_hand_ != nullptr) {
      in_hand_->abortWaitRecv();
      in_hand_->abortWaitSend();
    }
  }
  data_cv_.notify_all();
  // Closing the pair stops Gloo touching any buffer of this connection.
  if (pair_ != nullptr) pair_->close();
  if (control_.joinable()) control_.join();
  if (data_.joinable()) data_.join();
  if (fd_ >= 0) ::close(fd_);
  waits_.clear();
  awaiting_ack_.clear();
  records_[0].reset();
  records_[1].reset();
  context_.reset();
}

hvd_status Connection::state(std::string* why) const {
  hvd_status s = state_.load(std::memory_order_acquire);
  if (s != HVD_AGAIN && s != HVD_OK && why != nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    *why = why_;
  }
  return s;
}

void Connection::run_control() {
  try {
    set_up();
  } catch (const SetupError& e) {
    std::lock_guard<std::mutex> lock(mu_);
    why_ = e.what();
    state_.store(e.status(), std::memory_order_release);
    return;
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    why_ = std::string("Gloo: ") + e.what();
    state_.store(HVD_ERR_PEER_FAILED, std::memory_order_release);
    return;
  }
  serve();
}

void Connection::set_up() {
  const auto end = Clock::now() + transport_.options().timeout;
  auto stop = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  };
  const bool acceptor = role_ == Role::kAcceptor;
  auto make_pair = [&] {
    auto context = transport_.device()->createContext(acceptor ? 0 : 1, 2);
    context->setTimeout(transport_.options().timeout);
    gloo::transport::Pair* pair = context->createPair(other()).get();
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw SetupError(HVD_ERR_SHUT_DOWN, "closed during set-up");
    context_ = std::move(context);
    pair_ = pair;
  };
  auto address_of = [&](char* out) {
    std::vector<char> bytes = pair_->address().bytes();
    if (bytes.size() > kAddressMax) {
      throw SetupError(HVD_ERR_INTERNAL, "Gloo pair address of " +
                                             std::to_string(bytes.size()) +
                                             " bytes does not fit");
    }
    std::memcpy(out, bytes.data(), bytes.size());
    return static_cast<uint16_t>(bytes.size());
  };
  std::vector<char> peer_address;
  if (acceptor) {
    Hello hello{};
    read_all(fd_, &hello, sizeof(hello), end, stop, "reading the hello");
    if (hello.magic != kHelloMagic || hello.version != kProtocolVersion ||
        hello.address_bytes > kAddressMax) {
      throw SetupError(HVD_ERR_MISMATCH,
                       "a connector that does not speak this protocol");
    }
    peer_rank_ = hello.rank;
    Ack ack{};
    ack.magic = kAckMagic;
    ack.rank = transport_.rank();
    ack.epoch = info_.epoch;
    hvd_status refuse = HVD_OK;
    std::string why;
    if (hello.epoch != info_.epoch) {
      refuse = HVD_ERR_EPOCH_MISMATCH;
      why = "rank " + std::to_string(hello.rank) + " connects from epoch " +
            std::to_string(hello.epoch) + ", this rank is at epoch " +
            std::to_string(info_.epoch);
    } else if ((hello.expected_rank >= 0 &&
                hello.expected_rank != transport_.rank()) ||
               (info_.peer_rank >= 0 && info_.peer_rank != hello.rank)) {
      refuse = HVD_ERR_MISMATCH;
      why = "rank " + std::to_string(hello.rank) + " meant to reach rank " +
            std::to_string(hello.expected_rank);
    }
    ack.status = refuse;
    if (refuse == HVD_OK) {
      make_pair();
      ack.address_bytes = address_of(ack.address);
    }
    write_all(fd_, &ack, sizeof(ack), end, stop, "sending the ack");
    if (refuse != HVD_OK) throw SetupError(refuse, why);
    peer_address.assign(hello.address, hello.address + hello.address_bytes);
  } else {
    make_pair();
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) {
      throw SetupError(HVD_ERR_SYSTEM,
                       std::string("socket: ") + std::strerror(errno));
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = handle_.port;
    to.sin_addr.s_addr = handle_.ipv4;
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0 &&
        errno != EINPROGRESS) {
      throw SetupError(HVD_ERR_PEER_FAILED,
                       std::string("connect: ") + std::strerror(errno));
    }
    await(fd_, POLLOUT, end, stop, "connecting");
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      throw SetupError(HVD_ERR_PEER_FAILED,
                       std::string("connect: ") + std::strerror(err));
    }
    Hello hello{};
    hello.magic = kHelloMagic;
    hello.version = kProtocolVersion;
    hello.rank = transport_.rank();
    hello.expected_rank = info_.peer_rank;
    hello.epoch = info_.epoch;
    hello.address_bytes = address_of(hello.address);
    write_all(fd_, &hello, sizeof(hello), end, stop, "sending the hello");
    Ack ack{};
    read_all(fd_, &ack, sizeof(ack), end, stop, "reading the ack");
    if (ack.magic != kAckMagic || ack.address_bytes > kAddressMax) {
      throw SetupError(HVD_ERR_MISMATCH,
                       "an acceptor that does not speak this protocol");
    }
    if (ack.status != HVD_OK) {
      throw SetupError(
          ack.status, "rank " + std::to_string(ack.rank) +
                          " refused the connection: " +
                          hvd_plugin::status_text(ack.status) + " (its epoch " +
                          std::to_string(ack.epoch) + ", this one " +
                          std::to_string(info_.epoch) + ")");
    }
    peer_address.assign(ack.address, ack.address + ack.address_bytes);
  }
  pair_->connect(peer_address);
  ::close(fd_);
  fd_ = -1;
  for (int i = 0; i < 2; ++i) {
    record_storage_[i].resize(kControlBytes);
    records_[i] =
        context_->createUnboundBuffer(record_storage_[i].data(), kControlBytes);
    records_[i]->recv(other(), kControlSlot, 0, kControlBytes);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw SetupError(HVD_ERR_SHUT_DOWN, "closed during set-up");
    serving_ = true;
    data_ = std::thread([this] { run_data(); });
  }
  state_.store(HVD_OK, std::memory_order_release);
}

void Connection::serve() {
  try {
    for (uint64_t i = 0;; ++i) {
      Buffer* b = records_[i % 2].get();
      if (!b->waitRecv(nullptr, kIdleWait)) return;
      handle_record(record_storage_[i % 2].data());
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_ || failure_ != HVD_OK) return;
      }
      b->recv(other(), kControlSlot, 0, kControlBytes);
    }
  } catch (const std::exception& e) {
    fail(HVD_ERR_PEER_FAILED, peer_rank_.load(), e.what());
  }
}

void Connection::handle_record(const char* data) {
  Control record;
  std::memcpy(&record, data, sizeof(record));
  const char* payload = data + sizeof(record);
  std::unique_lock<std::mutex> lock(mu_);
  if (record.kind == Control::kReceived) {
    auto it = awaiting_ack_.find(record.seq);
    if (it == awaiting_ack_.end()) return;
    AwaitingAck done = std::move(it->second);
    awaiting_ack_.erase(it);
    lock.unlock();
    // The receiver has every byte, so Gloo has finished writing them.
    try {
      done.buffer->waitSend(nullptr, transport_.options().timeout);
    } catch (...) {
      lock.lock();
      finish(done.req, HVD_ERR_PEER_FAILED, peer_rank_.load(), 0);
      throw;
    }
    lock.lock();
    finish(done.req, HVD_OK, -1, done.bytes);
    return;
  }
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    if (it->tag != record.tag) continue;
    Posted p = *it;
    posted_.erase(it);
    deliver(p.req, p.buf, p.bytes, record.seq, record.length, payload);
    return;
  }
  Unexpected u{record.seq, record.tag, record.length, {}};
  if (record.length <= kInlineBytes) {
    u.inline_bytes.assign(payload, payload + record.length);
  }
  unexpected_.push_back(std::move(u));
}

void Connection::deliver(Request* req, void* buf, size_t capacity, uint64_t seq,
                         uint64_t length, const char* inline_bytes) {
  const bool truncated = length > capacity;
  if (length <= kInlineBytes) {
    if (!truncated && length > 0) std::memcpy(buf, inline_bytes, length);
    finish(req, truncated ? HVD_ERR_TRUNCATED : HVD_OK,
           truncated ? peer_rank_.load() : -1, truncated ? capacity : length);
    return;
  }
  Wait w;
  w.recv = true;
  w.req = req;
  w.seq = seq;
  w.status = truncated ? HVD_ERR_TRUNCATED : HVD_OK;
  w.bytes = truncated ? capacity : length;
  void* target = buf;
  if (truncated) {
    // The sender's bytes must still be taken off the wire.
    w.storage.resize(length);
    target = w.storage.data();
  }
  w.buffer = context_->createUnboundBuffer(target, length);
  w.buffer->recv(other(), data_slot(seq), 0, length);
  waits_.push_back(std::move(w));
  data_cv_.notify_one();
}

void Connection::send_record(const Control& record, const void* payload,
                             size_t bytes) {
  Wait w;
  w.recv = false;
  w.storage.resize(sizeof(record) + bytes);
  std::memcpy(w.storage.data(), &record, sizeof(record));
  if (bytes > 0) std::memcpy(w.storage.data() + sizeof(record), payload, bytes);
  w.buffer = context_->createUnboundBuffer(w.storage.data(), w.storage.size());
  w.buffer->send(other(), kControlSlot, 0, w.storage.size());
  waits_.push_back(std::move(w));
  data_cv_.notify_one();
}

void Connection::run_data() {
  const auto timeout = transport_.options().timeout;
  for (;;) {
    Wait w;
    {
      std::unique_lock<std::mutex> lock(mu_);
      data_cv_.wait(lock, [&] {
        return stopping_ || (failure_ == HVD_OK && !waits_.empty());
      });
      if (stopping_) return;
      w = std::move(waits_.front());
      waits_.pop_front();
      in_hand_ = w.buffer.get();
    }
    bool ok = false;
    std::string error;
    try {
      ok = w.recv ? w.buffer->waitRecv(nullptr, timeout)
                  : w.buffer->waitSend(nullptr, timeout);
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::unique_lock<std::mutex> lock(mu_);
    in_hand_ = nullptr;
    data_cv_.notify_all();  // a closing connection waits for the last one
    if (!error.empty()) {
      if (w.req != nullptr) {
        finish(w.req, HVD_ERR_PEER_FAILED, peer_rank_.load(), 0);
      }
      lock.unlock();
      fail(HVD_ERR_PEER_FAILED, peer_rank_.load(), error);
      return;
    }
    if (!ok || failure_ != HVD_OK) {
      // Without a failure, only this side stops a wait (closing).
      if (w.req != nullptr) {
        finish(w.req, failure_ != HVD_OK ? failure_ : HVD_ERR_ABORTED,
               failure_ != HVD_OK ? failure_peer_ : transport_.rank(), 0);
        w.req = nullptr;
      }
      graveyard_.push_back(std::move(w));
      if (stopping_) return;
      continue;
    }
    if (w.recv) {
      finish(w.req, w.status, w.status == HVD_OK ? -1 : peer_rank_.load(),
             w.bytes);
      Control ack{};
      ack.kind = Control::kReceived;
      ack.seq = w.seq;
      try {
        send_record(ack, nullptr, 0);
      } catch (const std::exception& e) {
        lock.unlock();
        fail(HVD_ERR_PEER_FAILED, peer_rank_.load(), e.what());
        return;
      }
    }
  }
}

Request* Connection::new_request(
    const std::shared_ptr<std::atomic<uint32_t>>& counter) {
  counter->fetch_add(1);
  return transport_.new_request(counter);
}

hvd_status Connection::isend(const void* buf, size_t bytes, uint64_t tag,
                             Request** out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_ != HVD_OK) return failure_;
  if (state_.load() != HVD_OK) return HVD_ERR_INVALID_ARGUMENT;
  if (sends_in_flight_->load() >= transport_.options().max_requests) {
    return HVD_AGAIN;
  }
  Request* r = new_request(sends_in_flight_);
  *out = r;
  try {
    post_send(r, buf, bytes, tag);
  } catch (const std::exception&) {
    fail_locked(HVD_ERR_PEER_FAILED, peer_rank_.load());
    if (!r->claimed.load()) {
      finish(r, HVD_ERR_PEER_FAILED, peer_rank_.load(), 0);
    }
  }
  return HVD_OK;
}

void Connection::post_send(Request* r, const void* buf, size_t bytes,
                           uint64_t tag) {
  Control record{};
  record.kind = Control::kMessage;
  record.seq = next_seq_++;
  record.tag = tag;
  record.length = bytes;
  if (bytes <= kInlineBytes) {
    // Copied into the record: the caller's buffer is free at once.
    send_record(record, buf, bytes);
    finish(r, HVD_OK, -1, bytes);
  } else {
    AwaitingAck a{r, bytes,
                  context_->createUnboundBuffer(const_cast<void*>(buf), bytes)};
    a.buffer->send(other(), data_slot(record.seq), 0, bytes);
    awaiting_ack_.emplace(record.seq, std::move(a));
    send_record(record, nullptr, 0);
  }
}

hvd_status Connection::irecv(void* buf, size_t bytes, uint64_t tag,
                             Request** out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_ != HVD_OK) return failure_;
  if (state_.load() != HVD_OK) return HVD_ERR_INVALID_ARGUMENT;
  if (recvs_in_flight_->load() >= transport_.options().max_requests) {
    return HVD_AGAIN;
  }
  Request* r = new_request(recvs_in_flight_);
  *out = r;
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (it->tag != tag) continue;
    Unexpected u = std::move(*it);
    unexpected_.erase(it);
    try {
      deliver(r, buf, bytes, u.seq, u.length, u.inline_bytes.data());
    } catch (const std::exception&) {
      fail_locked(HVD_ERR_PEER_FAILED, peer_rank_.load());
      if (!r->claimed.load()) {
        finish(r, HVD_ERR_PEER_FAILED, peer_rank_.load(), 0);
      }
    }
    return HVD_OK;
  }
  posted_.push_back(Posted{r, buf, bytes, tag});
  return HVD_OK;
}

void Connection::finish(Request* r, hvd_status status, int32_t peer,
                        uint64_t bytes) {
  transport_.complete(r, status, peer, bytes);
}

void Connection::fail_locked(hvd_status status, int32_t peer) {
  if (failure_ == HVD_OK) {
    failure_ = status;
    failure_peer_ = peer;
  }
  for (Posted& p : posted_) finish(p.req, failure_, failure_peer_, 0);
  posted_.clear();
  for (auto& [seq, a] : awaiting_ack_) {
    finish(a.req, failure_, failure_peer_, 0);
  }
  for (Wait& w : waits_) {
    if (w.req != nullptr) finish(w.req, failure_, failure_peer_, 0);
    w.req = nullptr;
    graveyard_.push_back(std::move(w));
  }
  waits_.clear();
  for (auto& b : records_) {
    if (b) b->abortWaitRecv();
  }
  if (in_hand_ != nullptr) {
    in_hand_->abortWaitRecv();
    in_hand_->abortWaitSend();
  }
  // The Gloo buffers stay until the connection closes: Gloo may still be
  // moving bytes of a transfer that was under way.
  for (auto& [seq, a] : awaiting_ack_) {
    Wait w;
    w.buffer = std::move(a.buffer);
    graveyard_.push_back(std::move(w));
  }
  awaiting_ack_.clear();
  data_cv_.notify_all();
}

void Connection::fail(hvd_status status, int32_t peer, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_ == HVD_OK && !stopping_) {
    // A peer that closes an idle connection is no news.
    bool idle = posted_.empty() && awaiting_ack_.empty() && waits_.empty();
    hvd_transport_common::log(
        transport_.host(), idle ? HVD_LOG_DEBUG : HVD_LOG_WARNING,
        "gloo: the connection with rank " + std::to_string(peer_rank_.load()) +
            " failed: " + why);
  }
  fail_locked(status, peer);
}

int32_t Connection::failed_peer() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_ == HVD_ERR_PEER_FAILED ? failure_peer_ : -1;
}

void Connection::abort(hvd_status reason, int32_t peer) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_locked(reason, peer);
}

}  // namespace hvd_gloo
