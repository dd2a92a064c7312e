#include "bootstrap/rendezvous_connection.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <thread>

#include "common/error.h"

namespace hvd::rendezvous {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

int remaining_ms(Connection::Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Connection::Clock::now());
  return static_cast<int>(
      std::clamp<int64_t>(left.count(), 0, std::numeric_limits<int>::max()));
}

// One connect attempt; returns the socket, or -1 with errno set.
int try_connect(const addrinfo* ai) {
  int fd =
      socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) return -1;
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

Connection::Connection(const std::string& address, int port,
                       std::vector<uint8_t> secret, Clock::time_point deadline)
    : name_("rendezvous service at " + address + ":" + std::to_string(port)),
      secret_(std::move(secret)) {
  connect_until(address, port, deadline);
  try {
    uint8_t greeting[sizeof kMagic + kNonceBytes];
    recv_all(greeting, sizeof greeting, deadline);
    if (std::memcmp(greeting, kMagic, sizeof kMagic) != 0) {
      throw Error(HVD_ERR_PEER_FAILED,
                  name_ +
                      " sent an unknown greeting (not a horovodrun "
                      "rendezvous service, or another protocol version)");
    }
    nonce_.assign(greeting + sizeof kMagic, greeting + sizeof greeting);
  } catch (...) {
    close(fd_);
    throw;
  }
}

Connection::~Connection() {
  if (fd_ >= 0) close(fd_);
}

void Connection::connect_until(const std::string& address, int port,
                               Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(address.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    throw Error(HVD_ERR_CONFIG, name_ + ": cannot resolve '" + address +
                                    "': " + gai_strerror(rc));
  }
  // The service is up before ranks start, but a loaded host may be slow to
  // accept: retry refused connections with a growing pause.
  auto pause = std::chrono::milliseconds(10);
  int last_error = 0;
  for (;;) {
    for (addrinfo* ai = found; ai; ai = ai->ai_next) {
      fd_ = try_connect(ai);
      if (fd_ >= 0) break;
      last_error = errno;
    }
    if (fd_ >= 0 || Clock::now() + pause >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
  freeaddrinfo(found);
  if (fd_ < 0) {
    throw Error(HVD_ERR_PEER_FAILED,
                "cannot connect to " + name_ + ": " + errno_text(last_error));
  }
}

void Connection::wait_ready(short events, Clock::time_point deadline,
                            const char* what) {
  for (;;) {
    pollfd p{fd_, events, 0};
    int rc = poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return;
    if (rc == 0) {
      throw Error(HVD_ERR_TIMEOUT,
                  std::string("timed out ") + what + " " + name_);
    }
    if (errno != EINTR) {
      throw Error(HVD_ERR_SYSTEM,
                  "poll on " + name_ + ": " + errno_text(errno));
    }
  }
}

void Connection::send_all(const uint8_t* data, size_t size,
                          Clock::time_point deadline) {
  while (size > 0) {
    wait_ready(POLLOUT, deadline, "sending to");
    ssize_t n = send(fd_, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw Error(HVD_ERR_PEER_FAILED,
                  "sending to " + name_ + ": " + errno_text(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void Connection::recv_all(uint8_t* data, size_t size,
                          Clock::time_point deadline) {
  while (size > 0) {
    wait_ready(POLLIN, deadline, "waiting for");
    ssize_t n = recv(fd_, data, size, MSG_DONTWAIT);
    if (n == 0) {
      throw Error(HVD_ERR_PEER_FAILED,
                  name_ +
                      " closed the connection (did horovodrun exit, or "
                      "reject this rank's secret?)");
    }
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw Error(HVD_ERR_PEER_FAILED,
                  "receiving from " + name_ + ": " + errno_text(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

Response Connection::call(Op op, const std::vector<uint8_t>& fields,
                          Clock::time_point deadline) {
  uint64_t seq = seq_++;
  Writer body;
  body.u64(seq).u8(op);
  std::vector<uint8_t> request = body.bytes();
  request.insert(request.end(), fields.begin(), fields.end());
  std::vector<uint8_t> tag = frame_tag(secret_, kFromClient, nonce_, request);

  Writer frame;
  frame.u32(static_cast<uint32_t>(kTagBytes + request.size()));
  std::vector<uint8_t> out = frame.bytes();
  out.insert(out.end(), tag.begin(), tag.end());
  out.insert(out.end(), request.begin(), request.end());
  send_all(out.data(), out.size(), deadline);

  uint8_t length_bytes[4];
  recv_all(length_bytes, sizeof length_bytes, deadline);
  uint32_t length = Reader(length_bytes, 4).u32();
  check_response_length(length, name_);
  std::vector<uint8_t> in(length);
  recv_all(in.data(), in.size(), deadline);
  Response response =
      open_response(in.data(), in.size(), secret_, nonce_, seq, op, name_);
  return response;
}

}  // namespace hvd::rendezvous
