// Building the tree: every rank with children listens and publishes
// "host:port" (and a token) through the bootstrap; each child connects to its
// parent and shakes hands (rank, world size, job, epoch, token). Then the
// monitor starts and every rank learns every rank's host, which is also the
// proof that the whole tree is up. All of it bounded by start_timeout.
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "common/log.h"
#include "control/impl.h"
#include "control/tree.h"

namespace hvd {

using control::FrameReader;
using control::FrameType;
using control::FrameWriter;

namespace {

uint64_t random_token() {
  uint64_t token = 0;
  if (getrandom(&token, sizeof token, 0) != sizeof token) {
    std::random_device device;
    token = (static_cast<uint64_t>(device()) << 32) | device();
  }
  return token;
}

std::chrono::milliseconds remaining(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  ~FdGuard() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// Writes one frame on a fresh connection, waiting up to `deadline`.
void write_frame(int fd, FrameType type, const std::vector<uint8_t>& payload,
                 Clock::time_point deadline, const std::string& peer) {
  FrameWriter writer;
  FrameWriter::Part part{payload.data(), payload.size()};
  bool ok = writer.send(fd, type, &part, 1);
  while (ok && writer.pending()) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, control::poll_timeout_ms(deadline)) <= 0)
      throw Error(HVD_ERR_TIMEOUT,
                  "control plane: timed out sending the handshake to " + peer);
    ok = writer.flush(fd);
  }
  if (!ok)
    throw Error(HVD_ERR_SYSTEM, "control plane: sending the handshake to " +
                                    peer + ": " + std::strerror(errno));
}

// Reads one frame; false when the peer closed first.
bool read_frame(int fd, FrameReader& reader, Clock::time_point deadline,
                FrameType* type, std::vector<uint8_t>* payload,
                const std::string& peer) {
  for (;;) {
    const uint8_t* data;
    uint32_t size;
    bool bad;
    if (reader.next(type, &data, &size, &bad)) {
      payload->assign(data, data + size);
      return true;
    }
    if (bad)
      throw Error(HVD_ERR_MISMATCH, "control plane: " + peer +
                                        " sent a malformed handshake (" +
                                        reader.why_bad() + ")");
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, control::poll_timeout_ms(deadline)) <= 0)
      throw Error(
          HVD_ERR_TIMEOUT,
          "control plane: timed out waiting for the handshake of " + peer);
    ssize_t n = reader.read_from(fd);
    if (n == 0) return false;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
  }
}

// Connections accepted but not yet shaken hands with, at most.
constexpr size_t kMaxPendingHandshakes = 64;

std::vector<uint8_t> encode_reject(hvd_status status,
                                   const std::string& reason) {
  std::vector<uint8_t> out;
  control::Encoder(out).u32(static_cast<uint32_t>(status)).str(reason);
  return out;
}

}  // namespace

void ControlPlane::Impl::start() {
  auto deadline = Clock::now() + options_.start_timeout;
  control::KaryTree tree(rank_, size_, options_.tree_arity);
  std::vector<int> children = tree.children();

  auto open_listener = [&]() -> int {
    if (children.empty()) return -1;
    auto address = control::choose_listen_address(
        options_.interfaces, bootstrap_.layout().cross_size <= 1, host_);
    int port = 0;
    int fd = control::listen_tcp(address.bind_ip,
                                 static_cast<int>(children.size()) + 16, &port);
    FdGuard guard(fd);
    token_ = random_token();
    std::vector<uint8_t> token(8);
    control::put_u64(token.data(), token_);
    bootstrap_.put(control::kTokenKey, token);
    std::string published = address.publish_ip + ":" + std::to_string(port);
    bootstrap_.put(control::kAddressKey,
                   std::vector<uint8_t>(published.begin(), published.end()));
    HVD_LOG(DEBUG) << "control plane: listening on " << published
                   << " for rank(s) " << children.front() << ".."
                   << children.back();
    return guard.release();
  };
  {
    FdGuard listener(open_listener());
    if (tree.parent() >= 0) connect_to_parent(tree.parent(), deadline);
    if (!children.empty()) accept_children(listener.get(), children, deadline);
  }

  int64_t now = control::now_ns();
  for (auto& link : links_) {
    link->last_receive.store(now);
    link->last_send.store(now);
  }
  monitor_thread_ = std::thread([this] { monitor(); });
  exchange_hosts(deadline);
  armed_at_.store(control::now_ns());
  armed_.store(true);
}

void ControlPlane::Impl::connect_to_parent(int parent,
                                           Clock::time_point deadline) {
  std::string peer = "rank " + std::to_string(parent) + " (this rank's parent)";
  // What the bootstrap holds may be stale (left by a control plane made
  // before this one, keys being re-put): a refused connection, or a token
  // the parent no longer has, means read it again, until the deadline.
  for (;;) {
    auto address_bytes =
        bootstrap_.get(parent, control::kAddressKey, remaining(deadline));
    auto token_bytes =
        bootstrap_.get(parent, control::kTokenKey, remaining(deadline));
    std::string address(address_bytes.begin(), address_bytes.end());
    std::string ip;
    int port = 0;
    if (!control::split_host_port(address, &ip, &port) ||
        token_bytes.size() != 8)
      throw Error(HVD_ERR_INTERNAL, "control plane: " + peer +
                                        " published a malformed address '" +
                                        address + "'");
    auto attempt =
        std::min(deadline, Clock::now() + std::chrono::milliseconds(500));
    int fd = control::connect_tcp(ip, port, attempt, peer);
    if (fd >= 0 && shake_hands(fd, parent, control::get_u64(token_bytes.data()),
                               deadline, peer))
      return;
    if (Clock::now() >= deadline)
      throw Error(HVD_ERR_TIMEOUT,
                  "control plane: rank " + std::to_string(rank_) +
                      " could not connect to " + peer + " at " + address +
                      " within " +
                      control::describe_duration(options_.start_timeout),
                  parent);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool ControlPlane::Impl::shake_hands(int fd, int parent, uint64_t token,
                                     Clock::time_point deadline,
                                     const std::string& peer) {
  auto link = std::make_unique<Link>(fd, parent, "", true);
  link->reader.set_max_payload(control::kMaxHandshakePayload);
  control::Hello hello;
  hello.rank = rank_;
  hello.size = size_;
  hello.epoch = options_.epoch;
  hello.token = token;
  hello.job_id = options_.job_id;
  hello.host = host_;
  write_frame(fd, FrameType::hello, control::encode(hello), deadline, peer);

  FrameType type;
  std::vector<uint8_t> reply;
  if (!read_frame(link->fd, link->reader, deadline, &type, &reply, peer))
    throw Error(HVD_ERR_PEER_FAILED,
                "control plane: " + peer +
                    " closed the connection during the handshake",
                parent);
  if (type == FrameType::reject) {
    control::Decoder in(reply.data(), reply.size());
    auto status = static_cast<hvd_status>(in.u32());
    std::string reason = in.str();
    if (in.ok() && status == HVD_AGAIN) return false;  // a stale token
    throw Error(in.ok() ? status : HVD_ERR_MISMATCH,
                "control plane: " + peer + " refused rank " +
                    std::to_string(rank_) + ": " + reason,
                parent);
  }
  control::Welcome welcome;
  if (type != FrameType::welcome ||
      !control::decode(reply.data(), reply.size(), &welcome) ||
      welcome.rank != parent)
    throw Error(HVD_ERR_MISMATCH,
                "control plane: " + peer + " answered the handshake with a " +
                    control::frame_type_name(type) + " frame");
  link->host = welcome.host;
  link->reader.set_max_payload(control::kMaxFramePayload);
  parent_ = link.get();
  links_.insert(links_.begin(), std::move(link));
  return true;
}

void ControlPlane::Impl::accept_children(int listen_fd,
                                         const std::vector<int>& children,
                                         Clock::time_point deadline) {
  struct Pending {
    int fd;
    std::unique_ptr<FrameReader> reader;
  };
  std::vector<Pending> pending;
  std::vector<std::unique_ptr<Link>> accepted(children.size());
  size_t connected = 0;
  auto close_pending = [&] {
    for (auto& p : pending) close(p.fd);
    pending.clear();
  };

  // Why a hello is refused, or "" when it is welcome.
  auto check = [&](const control::Hello& hello,
                   hvd_status* status) -> std::string {
    *status = HVD_ERR_MISMATCH;
    if (hello.magic != control::kProtocolMagic)
      return "not a control-plane connection";
    if (hello.version != control::kProtocolVersion) {
      *status = HVD_ERR_VERSION;
      return "protocol version " + std::to_string(hello.version) + ", rank " +
             std::to_string(rank_) + " speaks " +
             std::to_string(control::kProtocolVersion);
    }
    if (hello.job_id != options_.job_id)
      return "it belongs to job '" + hello.job_id + "', rank " +
             std::to_string(rank_) + " to job '" + options_.job_id + "'";
    if (hello.epoch != options_.epoch) {
      *status = HVD_ERR_EPOCH_MISMATCH;
      return "world epoch " + std::to_string(hello.epoch) + ", rank " +
             std::to_string(rank_) + " is at epoch " +
             std::to_string(options_.epoch);
    }
    if (hello.size != size_)
      return "world size " + std::to_string(hello.size) + ", rank " +
             std::to_string(rank_) + "'s is " + std::to_string(size_);
    if (hello.token != token_) {
      *status = HVD_AGAIN;  // it read an address this rank published before
      return "wrong connection token";
    }
    auto at = std::find(children.begin(), children.end(), hello.rank);
    if (at == children.end())
      return "rank " + std::to_string(hello.rank) + " is not a child of rank " +
             std::to_string(rank_) + " in the control tree";
    if (accepted[at - children.begin()])
      return "rank " + std::to_string(hello.rank) + " is already connected";
    return "";
  };

  try {
    while (connected < children.size()) {
      if (Clock::now() >= deadline) {
        std::string missing;
        for (size_t i = 0; i < children.size(); ++i)
          if (!accepted[i])
            missing +=
                (missing.empty() ? "" : ", ") + std::to_string(children[i]);
        throw Error(HVD_ERR_TIMEOUT,
                    "control plane: rank " + std::to_string(rank_) +
                        " timed out after " +
                        control::describe_duration(options_.start_timeout) +
                        " waiting for rank(s) " + missing + " to connect");
      }
      std::vector<pollfd> polls{{listen_fd, POLLIN, 0}};
      for (auto& p : pending) polls.push_back({p.fd, POLLIN, 0});
      if (poll(polls.data(), polls.size(),
               control::poll_timeout_ms(deadline)) <= 0)
        continue;

      for (size_t i = polls.size() - 1; i >= 1; --i) {
        if (!polls[i].revents) continue;
        Pending& p = pending[i - 1];
        ssize_t n = p.reader->read_from(p.fd);
        FrameType type;
        const uint8_t* data;
        uint32_t size;
        bool bad = false;
        bool complete = n > 0 && p.reader->next(&type, &data, &size, &bad);
        bool gone =
            n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || bad;
        if (!complete && !gone) continue;

        control::Hello hello;
        hvd_status status = HVD_ERR_MISMATCH;
        std::string refusal =
            bad    ? "it sent " + p.reader->why_bad()
            : gone ? "closed before the handshake"
            : type != FrameType::hello || !control::decode(data, size, &hello)
                ? "expected a hello frame"
                : check(hello, &status);
        if (refusal.empty()) {
          write_frame(p.fd, FrameType::welcome,
                      control::encode(control::Welcome{rank_, host_}), deadline,
                      "rank " + std::to_string(hello.rank));
          size_t index =
              std::find(children.begin(), children.end(), hello.rank) -
              children.begin();
          accepted[index] =
              std::make_unique<Link>(p.fd, hello.rank, hello.host, false);
          accepted[index]->reader = std::move(*p.reader);
          accepted[index]->reader.set_max_payload(control::kMaxFramePayload);
          ++connected;
        } else {
          if (status == HVD_AGAIN) {
            HVD_LOG(DEBUG) << "control plane: refused a stale connection to "
                           << "rank " << rank_ << ": " << refusal;
          } else {
            HVD_LOG(WARNING) << "control plane: refused a connection to rank "
                             << rank_ << ": " << refusal;
          }
          if (!gone) {
            try {
              write_frame(
                  p.fd, FrameType::reject, encode_reject(status, refusal),
                  std::min(deadline,
                           Clock::now() + std::chrono::milliseconds(100)),
                  "a refused peer");
            } catch (const Error&) {
            }
          }
          close(p.fd);
        }
        pending.erase(pending.begin() + static_cast<long>(i - 1));
      }
      if (polls[0].revents & POLLIN) {
        for (int fd; (fd = control::accept_tcp(listen_fd)) >= 0;) {
          // Connections that never shake hands cannot pile up: past the
          // limit the oldest one goes (a child sends its hello at once).
          if (pending.size() >= kMaxPendingHandshakes) {
            HVD_LOG(WARNING) << "control plane: rank " << rank_ << " closed "
                             << "a connection still silent after "
                             << kMaxPendingHandshakes << " newer ones";
            close(pending.front().fd);
            pending.erase(pending.begin());
          }
          pending.push_back({fd, std::make_unique<FrameReader>(
                                     control::kMaxHandshakePayload)});
        }
      }
    }
  } catch (...) {
    // Keep the children that did connect, so they hear why startup failed.
    close_pending();
    for (auto& link : accepted)
      if (link) links_.push_back(std::move(link));
    throw;
  }
  close_pending();
  for (auto& link : accepted) {
    children_.push_back(link.get());
    links_.push_back(std::move(link));
  }
}

void ControlPlane::Impl::exchange_hosts(Clock::time_point deadline) {
  auto gathered =
      gather(std::vector<uint8_t>(host_.begin(), host_.end()), deadline);
  control::HostTable table;
  if (rank_ == 0) {
    std::map<std::string, uint32_t> ids;
    for (const auto& bytes : gathered) {
      std::string name(bytes.begin(), bytes.end());
      auto [at, added] =
          ids.emplace(name, static_cast<uint32_t>(table.names.size()));
      if (added) table.names.push_back(name);
      table.index.push_back(at->second);
    }
  }
  auto received = broadcast(rank_ == 0 ? control::encode(table)
                                       : std::vector<uint8_t>(),
                            deadline);
  if (!control::decode(received.data(), received.size(), size_, &table))
    throw Error(HVD_ERR_INTERNAL, "control plane: a malformed host table");
  host_names_ = std::move(table.names);
  host_index_ = std::move(table.index);
  hosts_known_.store(true, std::memory_order_release);
}

}  // namespace hvd
