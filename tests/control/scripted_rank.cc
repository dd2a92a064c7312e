#include "scripted_rank.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "control/net.h"
#include "control/tree.h"

namespace hvd::test {

using control::FrameType;

ScriptedRank::ScriptedRank(FakeStore& store, int rank, int size,
                           const ControlPlaneOptions& options)
    : store_(store), rank_(rank), size_(size), options_(options) {}

ScriptedRank::~ScriptedRank() { close_abruptly(); }

void ScriptedRank::close_abruptly() {
  if (parent_fd_ >= 0) close(parent_fd_);
  parent_fd_ = -1;
  for (int fd : child_fds_) close(fd);
  child_fds_.clear();
}

ScriptedRank::Frame ScriptedRank::next_frame(int fd) {
  auto deadline = control::Clock::now() + std::chrono::seconds(20);
  control::FrameReader& reader = readers_[fd];
  for (;;) {
    FrameType type;
    const uint8_t* data;
    uint32_t size;
    bool bad;
    while (reader.next(&type, &data, &size, &bad))
      if (type != FrameType::heartbeat && type != FrameType::summon)
        return {type, std::vector<uint8_t>(data, data + size)};
    if (bad) throw std::runtime_error("scripted rank: malformed frame");
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, control::poll_timeout_ms(deadline)) <= 0)
      throw std::runtime_error("scripted rank: timed out reading a frame");
    ssize_t n = reader.read_from(fd);
    if (n == 0) throw std::runtime_error("scripted rank: peer closed");
    if (n < 0 && errno != EAGAIN)
      throw std::runtime_error("scripted rank: read error");
  }
}

void ScriptedRank::send(int fd, FrameType type,
                        const std::vector<uint8_t>& payload) {
  control::FrameWriter writer;
  control::FrameWriter::Part part{payload.data(), payload.size()};
  bool ok = writer.send(fd, type, &part, 1);
  while (ok && writer.pending()) {
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, 1000);
    ok = writer.flush(fd);
  }
  if (!ok) throw std::runtime_error("scripted rank: send failed");
}

void ScriptedRank::join() {
  auto deadline = control::Clock::now() + options_.start_timeout;
  control::KaryTree tree(rank_, size_, options_.tree_arity);
  children_ = tree.children();

  int listener = -1;
  uint64_t token = 0x5eed;
  if (!children_.empty()) {
    int port = 0;
    listener = control::listen_tcp("127.0.0.1", 16, &port);
    std::vector<uint8_t> token_bytes(8);
    control::put_u64(token_bytes.data(), token);
    store_.put(rank_, control::kTokenKey, token_bytes);
    std::string address = "127.0.0.1:" + std::to_string(port);
    store_.put(rank_, control::kAddressKey, {address.begin(), address.end()});
  }

  if (tree.parent() >= 0) {
    auto address = store_.get(tree.parent(), control::kAddressKey,
                              std::chrono::seconds(20));
    auto parent_token =
        store_.get(tree.parent(), control::kTokenKey, std::chrono::seconds(20));
    std::string ip;
    int port = 0;
    control::split_host_port(std::string(address.begin(), address.end()), &ip,
                             &port);
    while ((parent_fd_ = control::connect_tcp(ip, port, deadline, "parent")) <
           0)
      if (control::Clock::now() >= deadline)
        throw std::runtime_error("scripted rank: no parent");
    control::Hello hello;
    hello.rank = rank_;
    hello.size = size_;
    hello.epoch = options_.epoch;
    hello.token = control::get_u64(parent_token.data());
    hello.job_id = options_.job_id;
    hello.host = host();
    send(parent_fd_, FrameType::hello, control::encode(hello));
    if (next_frame(parent_fd_).type != FrameType::welcome)
      throw std::runtime_error("scripted rank: not welcomed");
  }

  child_fds_.assign(children_.size(), -1);
  for (size_t connected = 0; connected < children_.size();) {
    pollfd p{listener, POLLIN, 0};
    poll(&p, 1, control::poll_timeout_ms(deadline));
    int fd = control::accept_tcp(listener);
    if (fd < 0) continue;
    Frame frame = next_frame(fd);
    control::Hello hello;
    control::decode(frame.payload.data(), frame.payload.size(), &hello);
    auto at = std::find(children_.begin(), children_.end(), hello.rank);
    if (at == children_.end())
      throw std::runtime_error("scripted rank: unknown child");
    child_fds_[at - children_.begin()] = fd;
    send(fd, FrameType::welcome,
         control::encode(control::Welcome{rank_, host()}));
    ++connected;
  }
  if (listener >= 0) close(listener);

  // The host exchange is the first gather and broadcast.
  std::string name = host();
  relay_gather({name.begin(), name.end()});
  relay_broadcast();
}

void ScriptedRank::relay_gather(const std::vector<uint8_t>& mine) {
  uint64_t sequence = ++gathers_;
  std::vector<uint8_t> payload(8);
  control::put_u64(payload.data(), sequence);
  control::append_gather_entry(payload, rank_, mine.data(), mine.size());
  for (int fd : child_fds_) {
    Frame frame = next_frame(fd);
    if (frame.type != FrameType::gather)
      throw std::runtime_error("scripted rank: expected a gather");
    payload.insert(payload.end(), frame.payload.begin() + 8,
                   frame.payload.end());
  }
  send(parent_fd_, FrameType::gather, payload);
}

std::vector<uint8_t> ScriptedRank::relay_broadcast() {
  ++broadcasts_;
  Frame frame = next_frame(parent_fd_);
  if (frame.type != FrameType::broadcast)
    throw std::runtime_error("scripted rank: expected a broadcast");
  for (int fd : child_fds_) send(fd, FrameType::broadcast, frame.payload);
  return {frame.payload.begin() + 8, frame.payload.end()};
}

void ScriptedRank::relay_round() {
  std::vector<uint8_t> mine{static_cast<uint8_t>(rank_)};
  relay_gather(mine);
  relay_broadcast();
}

}  // namespace hvd::test
