// Setting up a tcp connection: every stream connects (trying the listener's
// addresses in order), sends its Hello and waits for the Ack. The accepting
// end gathers the streams by key, checks epoch and rank once all are in,
// and acks each.
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/host_access.h"
#include "connection.h"
#include "horovod_plugin/boundary.h"
#include "listener.h"
#include "sockets.h"
#include "wire.h"

namespace hvd_tcp {

using hvd_plugin::Failure;
using hvd_plugin::refuse;

namespace {

uint64_t random_key() {
  uint64_t key = 0;
  if (getrandom(&key, sizeof(key), 0) != sizeof(key)) {
    key = (static_cast<uint64_t>(getpid()) << 32) ^
          reinterpret_cast<uintptr_t>(&key);
  }
  return key;
}

}  // namespace

Connection::Connection(Transport& transport, const hvd_conn_info& info,
                       std::vector<Address> targets)
    : t_(transport),
      info_(info),
      connecting_(true),
      key_(random_key()),
      peer_rank_(info.peer_rank),
      targets_(std::move(targets)),
      streams_(transport.options().streams) {
  for (uint32_t i = 0; i < streams_.size(); ++i) {
    Stream& s = streams_[i];
    s.index = i;
    s.source.owner = this;
    s.source.index = i;
    s.hello.magic = kHelloMagic;
    s.hello.version = kProtocolVersion;
    s.hello.stream_index = static_cast<uint16_t>(i);
    s.hello.stream_count = static_cast<uint16_t>(streams_.size());
    s.hello.rank = info.self_rank;
    s.hello.expected_rank = info.peer_rank;
    s.hello.epoch = info.epoch;
    s.hello.conn_key = key_;
  }
  for (Stream& s : streams_) {
    connect_stream(s);
    if (state_ == State::kFailed) break;
  }
}

Connection::Connection(Transport& transport, Listener* listener,
                       const Hello& first)
    : t_(transport),
      connecting_(false),
      listener_(listener),
      key_(first.conn_key),
      peer_rank_(first.rank),
      peer_epoch_(first.epoch),
      streams_(first.stream_count) {
  for (uint32_t i = 0; i < streams_.size(); ++i) {
    streams_[i].index = i;
    streams_[i].source.owner = this;
    streams_[i].source.index = i;
  }
}

Connection::~Connection() {
  if (listener_ != nullptr) listener_->forget(this);
  for (Stream& s : streams_) {
    unwatch(s);
    if (s.fd >= 0) ::close(s.fd);
    while (TxItem* item = s.tx.pop_front()) t_.free_item(item);
  }
  while (InMessage* m = arriving_.pop_front()) {
    if (UnexpectedMessages::linked(m)) unexpected_.remove(m);
    t_.free_message(m);
  }
  while (InMessage* m = unexpected_.pop_front()) {
    t_.free_message(m);
  }
}

void Connection::unwatch(Stream& s) {
  if (!s.watched) return;
  t_.unwatch(s.fd);
  s.watched = false;
  s.interest = 0;
}

// ---- the connecting end ----------------------------------------------------

void Connection::connect_stream(Stream& s) {
  while (s.target < targets_.size()) {
    const Address& to = targets_[s.target];
    int error = 0;
    s.fd = start_connect(to, t_.source_for(to.family()), &error);
    if (s.fd >= 0) {
      s.phase = Stream::kConnecting;
      t_.watch(s.fd, &s.source, EPOLLOUT);
      s.watched = true;
      s.interest = EPOLLOUT;
      return;
    }
    connect_errors_ += (connect_errors_.empty() ? "" : ", ") + to.text() +
                       " (" + std::strerror(error) + ")";
    ++s.target;
  }
  fail(HVD_ERR_PEER_FAILED, info_.peer_rank,
       "could not connect to rank " + std::to_string(info_.peer_rank) +
           "; tried " + connect_errors_);
}

void Connection::step_connecting(Stream& s) {
  if (s.phase == Stream::kConnecting) {
    int result = connect_result(s.fd);
    if (result < 0) return;
    if (result != 0) {
      connect_errors_ += (connect_errors_.empty() ? "" : ", ") +
                         targets_[s.target].text() + " (" +
                         std::strerror(result) + ")";
      unwatch(s);
      ::close(s.fd);
      s.fd = -1;
      ++s.target;
      connect_stream(s);
      return;
    }
    s.phase = Stream::kSendHello;
    t_.modify(s.fd, &s.source, EPOLLIN);
    s.interest = EPOLLIN;
  }
  if (s.phase == Stream::kSendHello) {
    iovec iov{reinterpret_cast<uint8_t*>(&s.hello) + s.shaken,
              sizeof(Hello) - s.shaken};
    long n = send_some(s.fd, &iov, 1);
    if (n < 0) {
      peer_gone(s, n);
      return;
    }
    s.shaken += static_cast<size_t>(n);
    if (s.shaken < sizeof(Hello)) return;
    s.phase = Stream::kAwaitAck;
    s.shaken = 0;
  }
  if (s.phase == Stream::kAwaitAck) {
    long n = recv_some(s.fd, reinterpret_cast<uint8_t*>(&s.ack) + s.shaken,
                       sizeof(Ack) - s.shaken);
    if (n < 0) {
      peer_gone(s, n);
      return;
    }
    s.shaken += static_cast<size_t>(n);
    if (s.shaken < sizeof(Ack)) return;
    const Ack& a = s.ack;
    std::string problem = ack_problem(a);
    if (!problem.empty()) {
      fail(HVD_ERR_INTERNAL, info_.peer_rank,
           "a bad handshake reply from " + targets_[s.target].text() + ": " +
               problem);
      return;
    }
    if (a.status == HVD_ERR_EPOCH_MISMATCH) {
      fail(HVD_ERR_EPOCH_MISMATCH, a.rank,
           "rank " + std::to_string(a.rank) + " is at epoch " +
               std::to_string(a.epoch) + ", this rank at epoch " +
               std::to_string(info_.epoch));
      return;
    }
    if (a.status != HVD_OK) {
      fail(a.status, a.rank,
           "rank " + std::to_string(a.rank) + " refused the connection");
      return;
    }
    if (info_.peer_rank >= 0 && a.rank != info_.peer_rank) {
      fail(HVD_ERR_MISMATCH, a.rank,
           "reached rank " + std::to_string(a.rank) + ", expected rank " +
               std::to_string(info_.peer_rank));
      return;
    }
    peer_rank_ = a.rank;
    s.phase = Stream::kReady;
  }
}

// ---- the accepting end -----------------------------------------------------

bool Connection::attach(int fd, const Hello& h) {
  if (h.stream_count != streams_.size() || h.stream_index >= streams_.size() ||
      streams_[h.stream_index].fd >= 0 || h.rank != peer_rank_ ||
      h.epoch != peer_epoch_) {
    return false;
  }
  Stream& s = streams_[h.stream_index];
  s.fd = fd;
  s.hello = h;
  s.phase = Stream::kSendAck;
  t_.watch(fd, &s.source, EPOLLIN);
  s.watched = true;
  s.interest = EPOLLIN;
  ++attached_;
  return true;
}

void Connection::accepted(const hvd_conn_info& info) {
  info_ = info;
  if (peer_epoch_ != info.epoch) {
    refuse_with_ = HVD_ERR_EPOCH_MISMATCH;
  } else if (info.peer_rank >= 0 && info.peer_rank != peer_rank_) {
    refuse_with_ = HVD_ERR_MISMATCH;
  }
}

void Connection::listener_gone() {
  listener_ = nullptr;
  if (!gathered()) {
    fail(HVD_ERR_PEER_FAILED, peer_rank_,
         "the listener closed before every stream of rank " +
             std::to_string(peer_rank_) + " arrived");
  }
}

void Connection::step_accepting(Stream& s) {
  if (s.phase != Stream::kSendAck) return;
  Ack a{};
  a.magic = kHelloMagic;
  a.status = refuse_with_;
  a.rank = info_.self_rank;
  a.epoch = info_.epoch;
  iovec iov{reinterpret_cast<uint8_t*>(&a) + s.shaken, sizeof(Ack) - s.shaken};
  long n = send_some(s.fd, &iov, 1);
  if (n < 0) {
    peer_gone(s, n);
    return;
  }
  s.shaken += static_cast<size_t>(n);
  if (s.shaken == sizeof(Ack)) s.phase = Stream::kReady;
}

// ---- both ------------------------------------------------------------------

hvd_status Connection::handshake() {
  t_.aborted();  // applies a pending abort, which fails this connection
  if (state_ == State::kEstablished) return HVD_OK;
  if (state_ == State::kFailed) return refusal();
  try {
    if (connecting_) {
      for (Stream& s : streams_) {
        if (state_ == State::kSettingUp) step_connecting(s);
      }
    } else {
      if (listener_ != nullptr && !gathered()) listener_->pump();
      if (!gathered()) {
        for (Stream& s : streams_) {
          if (s.fd >= 0 && at_end(s.fd)) {
            fail(HVD_ERR_PEER_FAILED, peer_rank_,
                 "rank " + std::to_string(peer_rank_) +
                     " went away during the handshake");
            break;
          }
        }
        return state_ == State::kFailed ? refusal() : HVD_AGAIN;
      }
      for (Stream& s : streams_) {
        if (state_ == State::kSettingUp) step_accepting(s);
      }
    }
  } catch (const Failure& f) {
    fail(f.status(), peer_rank_, f.what());
  }
  if (state_ == State::kFailed) return refusal();
  for (const Stream& s : streams_) {
    if (s.phase != Stream::kReady) return HVD_AGAIN;
  }
  if (!connecting_ && refuse_with_ == HVD_ERR_EPOCH_MISMATCH) {
    fail(HVD_ERR_EPOCH_MISMATCH, peer_rank_,
         "rank " + std::to_string(peer_rank_) + " connected at epoch " +
             std::to_string(peer_epoch_) + ", this rank is at epoch " +
             std::to_string(info_.epoch));
    return refusal();
  }
  if (!connecting_ && refuse_with_ != HVD_OK) {
    fail(refuse_with_, peer_rank_,
         "rank " + std::to_string(peer_rank_) + " connected, expected rank " +
             std::to_string(info_.peer_rank));
    return refusal();
  }
  establish();
  return HVD_OK;
}

void Connection::establish() {
  state_ = State::kEstablished;
  listener_ = nullptr;
  staging_.reset(new uint8_t[Transport::kScratchBytes]);
  choose_congestion_control();
  for (Stream& s : streams_) set_interest(s);
}

void Connection::choose_congestion_control() {
  std::string name = t_.options().congestion_control;
  if (name == "system") return;
  if (name == "auto") {
    if (!same_host(streams_[0].fd)) return;
    name = "reno";
  }
  for (Stream& s : streams_) {
    if (!set_congestion_control(s.fd, name)) {
      hvd_transport_common::log(
          t_.host(), HVD_LOG_DEBUG,
          "tcp: the kernel refused congestion control '" + name +
              "' for the connection with rank " + std::to_string(peer_rank_) +
              " (" + std::strerror(errno) + "); it keeps its default");
      return;
    }
  }
}

hvd_status Connection::refusal() const {
  if (state_ == State::kFailed) return refuse(status_, error_);
  return refuse(HVD_ERR_INVALID_ARGUMENT,
                "the connection is not established yet (conn_test has not "
                "returned HVD_OK)");
}

}  // namespace hvd_tcp
