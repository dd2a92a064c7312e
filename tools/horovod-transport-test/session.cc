#include "session.h"

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>

namespace hvd_conformance {

using Clock = std::chrono::steady_clock;

namespace {

// How long the wait loop spins after the last progress before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(50);
// For the first part of it the loop spins flat out; after that it yields the
// core on each round, so a peer that shares the core gets to run.
constexpr auto kHotSpin = std::chrono::microseconds(10);

std::string describe(const char* kind, size_t bytes, const char* dir, int peer,
                     uint64_t tag) {
  return std::string(kind) + " of " + std::to_string(bytes) + " bytes " + dir +
         " rank " + std::to_string(peer) + " (tag " + std::to_string(tag) + ")";
}

}  // namespace

void fail_case(const std::string& why) { throw CaseFailure(why); }

std::string status_text(hvd_status status) {
  switch (status) {
    case HVD_OK:
      return "HVD_OK";
    case HVD_AGAIN:
      return "HVD_AGAIN";
    case HVD_ERR_UNSUPPORTED:
      return "HVD_ERR_UNSUPPORTED";
    case HVD_ERR_INVALID_ARGUMENT:
      return "HVD_ERR_INVALID_ARGUMENT";
    case HVD_ERR_OUT_OF_MEMORY:
      return "HVD_ERR_OUT_OF_MEMORY";
    case HVD_ERR_PEER_FAILED:
      return "HVD_ERR_PEER_FAILED";
    case HVD_ERR_TIMEOUT:
      return "HVD_ERR_TIMEOUT";
    case HVD_ERR_ABORTED:
      return "HVD_ERR_ABORTED";
    case HVD_ERR_EPOCH_MISMATCH:
      return "HVD_ERR_EPOCH_MISMATCH";
    case HVD_ERR_MISMATCH:
      return "HVD_ERR_MISMATCH";
    case HVD_ERR_VERSION:
      return "HVD_ERR_VERSION";
    case HVD_ERR_CONFIG:
      return "HVD_ERR_CONFIG";
    case HVD_ERR_SYSTEM:
      return "HVD_ERR_SYSTEM";
    case HVD_ERR_INTERNAL:
      return "HVD_ERR_INTERNAL";
    case HVD_ERR_TRUNCATED:
      return "HVD_ERR_TRUNCATED";
    case HVD_ERR_NOT_FOUND:
      return "HVD_ERR_NOT_FOUND";
    case HVD_ERR_SHUT_DOWN:
      return "HVD_ERR_SHUT_DOWN";
    default:
      return "status " + std::to_string(status);
  }
}

Session::Session(CaseContext& ctx)
    : ctx_(ctx),
      api_(ctx.api),
      rank_(ctx.world.rank()),
      size_(ctx.world.size()) {
  const hvd_host* host = ctx.world.host();
  epoch_ = host->world != nullptr ? host->world->epoch : 0;
  hvd_status s = api_.init(host, &t_);
  if (s != HVD_OK || t_ == nullptr) {
    t_ = nullptr;
    fail_case("init: " + status_text(s) + ": " + api_.last_error(nullptr));
  }
  conns_.assign(size_, nullptr);
}

Session::~Session() {
  try {
    close();
  } catch (...) {
  }
}

void Session::close() {
  if (t_ == nullptr) return;
  hvd_status worst = HVD_OK;
  std::string what;
  for (int p = 0; p < size_; ++p) {
    if (conns_[p] == nullptr) continue;
    hvd_status s = api_.conn_close(conns_[p]);
    conns_[p] = nullptr;
    if (s != HVD_OK && worst == HVD_OK) {
      worst = s;
      what = "conn_close with rank " + std::to_string(p);
    }
  }
  if (listener_ != nullptr) {
    hvd_status s = api_.listener_close(listener_);
    listener_ = nullptr;
    if (s != HVD_OK && worst == HVD_OK) {
      worst = s;
      what = "listener_close";
    }
  }
  hvd_status s = api_.finalize(t_);
  t_ = nullptr;
  if (s != HVD_OK && worst == HVD_OK) {
    worst = s;
    what = "finalize";
  }
  if (worst != HVD_OK) fail_case(what + ": " + status_text(worst));
}

std::string Session::last_error() const {
  const char* text = api_.last_error(t_);
  return text != nullptr ? text : "";
}

std::vector<int> Session::peers() const {
  std::vector<int> out;
  for (int p = 0; p < size_; ++p) {
    if (p != rank_) out.push_back(p);
  }
  return out;
}

void Session::listen() {
  if (listener_ != nullptr) return;
  uint8_t buf[HVD_TRANSPORT_HANDLE_MAX] = {};
  hvd_status s = api_.listen(t_, buf, &listener_);
  check(s == HVD_OK, "listen: " + status_text(s) + ": " + last_error());
  uint32_t bytes = ctx_.props.handle_bytes;
  handles_ = ctx_.allgather(Bytes(buf, buf + bytes));
}

void Session::connect_all(ConnectOrder order) {
  listen();
  auto connect_lower = [&] {
    for (int p = 0; p < rank_; ++p) {
      hvd_conn_info info{sizeof(info), rank_, p, epoch_};
      hvd_conn* c = nullptr;
      hvd_status s = api_.connect(t_, handles_[p].data(), &info, &c);
      check(s == HVD_OK && c != nullptr,
            "connect to rank " + std::to_string(p) + ": " + status_text(s) +
                ": " + last_error());
      conns_[p] = c;
    }
  };
  size_t need = static_cast<size_t>(size_ - rank_ - 1);
  std::vector<hvd_conn*> accepted;
  auto accept_some = [&] {
    while (accepted.size() < need) {
      hvd_conn_info info{sizeof(info), rank_, -1, epoch_};
      hvd_conn* c = nullptr;
      hvd_status s = api_.accept(listener_, &info, &c);
      if (s == HVD_AGAIN) return false;
      check(s == HVD_OK && c != nullptr,
            "accept: " + status_text(s) + ": " + last_error());
      accepted.push_back(c);
    }
    return true;
  };
  switch (order) {
    case ConnectOrder::kConnectFirst:
      connect_lower();
      ctx_.barrier();
      break;
    case ConnectOrder::kAcceptFirst:
      if (need > 0) {
        hvd_conn_info info{sizeof(info), rank_, -1, epoch_};
        hvd_conn* c = nullptr;
        hvd_status s = api_.accept(listener_, &info, &c);
        check(s == HVD_AGAIN, "accept before anyone connected returned " +
                                  status_text(s) + " instead of HVD_AGAIN");
      }
      ctx_.barrier();
      connect_lower();
      break;
    case ConnectOrder::kTogether:
      connect_lower();
      break;
  }
  std::vector<hvd_conn*> ready;
  auto deadline = Clock::now() + ctx_.timeout();
  for (;;) {
    bool changed = accept_some();
    std::vector<std::pair<hvd_conn*, int>> all;
    for (int p = 0; p < rank_; ++p) all.push_back({conns_[p], p});
    for (hvd_conn* c : accepted) all.push_back({c, -1});
    size_t done = 0;
    for (auto [c, p] : all) {
      if (std::find(ready.begin(), ready.end(), c) != ready.end()) {
        ++done;
        continue;
      }
      hvd_status s = api_.conn_test(c);
      if (s == HVD_AGAIN) continue;
      check(s == HVD_OK,
            "conn_test of the connection " +
                (p >= 0 ? "to rank " + std::to_string(p)
                        : std::string("accepted from a higher rank")) +
                ": " + status_text(s) + ": " + last_error());
      ready.push_back(c);
      changed = true;
      ++done;
    }
    if (done == static_cast<size_t>(size_ - 1)) break;
    if (Clock::now() > deadline) {
      fail_case("connections not established after " +
                std::to_string(ctx_.options.timeout_s) + " s (" +
                std::to_string(done) + " of " + std::to_string(size_ - 1) +
                " ready, " + std::to_string(accepted.size()) + " of " +
                std::to_string(need) + " accepted)");
    }
    if (!changed) sleep(std::chrono::milliseconds(1));
  }
  for (int p = 0; p < rank_; ++p) {
    int32_t peer = api_.conn_peer(conns_[p]);
    check(peer == p, "conn_peer of the connection to rank " +
                         std::to_string(p) + " says rank " +
                         std::to_string(peer));
  }
  for (hvd_conn* c : accepted) {
    int32_t peer = api_.conn_peer(c);
    check(peer > rank_ && peer < size_ && conns_[peer] == nullptr,
          "an accepted connection names rank " + std::to_string(peer) +
              " (expected each of the higher ranks once)");
    conns_[peer] = c;
  }
}

hvd_status Session::try_send(int peer, const void* buf, size_t bytes,
                             uint64_t tag, Op** out) {
  hvd_request* r = nullptr;
  hvd_status s = api_.isend(conns_[peer], buf, bytes, tag, nullptr, &r);
  if (s != HVD_OK) {
    check(r == nullptr,
          "isend answered " + status_text(s) + " but set the request");
    return s;
  }
  ops_.push_back(Op{r, false, {}, describe("send", bytes, "to", peer, tag)});
  *out = &ops_.back();
  return HVD_OK;
}

Op* Session::send(int peer, const void* buf, size_t bytes, uint64_t tag) {
  auto deadline = Clock::now() + ctx_.timeout();
  for (;;) {
    Op* op = nullptr;
    hvd_status s = try_send(peer, buf, bytes, tag, &op);
    if (s == HVD_OK) return op;
    check(s == HVD_AGAIN, describe("isend", bytes, "to", peer, tag) + ": " +
                              status_text(s) + ": " + last_error());
    bool progressed = false;
    for (Op& o : ops_) progressed = (!o.done && test(&o)) || progressed;
    check(Clock::now() < deadline, describe("isend", bytes, "to", peer, tag) +
                                       ": still HVD_AGAIN after the timeout");
    if (!progressed) sleep(std::chrono::milliseconds(1));
  }
}

Op* Session::recv(int peer, void* buf, size_t bytes, uint64_t tag) {
  auto deadline = Clock::now() + ctx_.timeout();
  for (;;) {
    hvd_request* r = nullptr;
    hvd_status s = api_.irecv(conns_[peer], buf, bytes, tag, nullptr, &r);
    if (s == HVD_OK) {
      ops_.push_back(
          Op{r, false, {}, describe("receive", bytes, "from", peer, tag)});
      return &ops_.back();
    }
    check(s == HVD_AGAIN, describe("irecv", bytes, "from", peer, tag) + ": " +
                              status_text(s) + ": " + last_error());
    bool progressed = false;
    for (Op& o : ops_) progressed = (!o.done && test(&o)) || progressed;
    check(Clock::now() < deadline, describe("irecv", bytes, "from", peer, tag) +
                                       ": still HVD_AGAIN after the timeout");
    if (!progressed) sleep(std::chrono::milliseconds(1));
  }
}

bool Session::test(Op* op) {
  if (op->done) return true;
  int32_t done = 0;
  hvd_completion c{};
  c.struct_size = sizeof(c);
  hvd_status s = api_.test(op->req, &done, &c);
  check(
      s == HVD_OK || s == HVD_AGAIN,
      "test of the " + op->what + ": " + status_text(s) + ": " + last_error());
  if (s == HVD_OK && done) {
    op->done = true;
    op->result = c;
    op->req = nullptr;
  }
  return op->done;
}

void Session::wait(const std::vector<Op*>& ops) {
  auto deadline = Clock::now() + ctx_.timeout();
  auto spin_until = Clock::now() + kSpin;
  bool manual = (ctx_.props.flags & HVD_TRANSPORT_NEEDS_PROGRESS) &&
                api_.progress != nullptr;
  for (;;) {
    bool all = true;
    bool progressed = false;
    const Op* pending = nullptr;
    size_t pending_count = 0;
    for (Op* op : ops) {
      if (op->done) continue;
      if (test(op)) {
        progressed = true;
      } else {
        all = false;
        if (pending == nullptr) pending = op;
        ++pending_count;
      }
    }
    if (all) return;
    if (manual) api_.progress(t_);
    auto now = Clock::now();
    if (progressed) {
      spin_until = now + kSpin;
      continue;
    }
    if (now > deadline) {
      fail_case("timed out after " + std::to_string(ctx_.options.timeout_s) +
                " s waiting for the " + pending->what +
                (pending_count > 1
                     ? " and " + std::to_string(pending_count - 1) + " more"
                     : std::string()));
    }
    if (now < spin_until) {
      if (spin_until - now < kSpin - kHotSpin) sched_yield();
      continue;
    }
    sleep(std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(100),
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
            std::chrono::milliseconds(1)));
  }
}

void Session::sleep(std::chrono::milliseconds limit) {
  int fd = api_.wait_fd != nullptr ? api_.wait_fd(t_) : -1;
  if (fd < 0) {
    usleep(50);
    return;
  }
  if (api_.wait_arm != nullptr && api_.wait_arm(t_) != HVD_OK) return;
  pollfd p{fd, POLLIN, 0};
  poll(&p, 1, static_cast<int>(limit.count()));
}

void Session::expect_ok(const Op* op, uint64_t bytes) {
  check(op->result.status == HVD_OK,
        "the " + op->what + " failed: " + status_text(op->result.status) +
            " (peer " + std::to_string(op->result.peer) + ")");
  check(op->result.bytes == bytes, "the " + op->what + " completed with " +
                                       std::to_string(op->result.bytes) +
                                       " bytes, expected " +
                                       std::to_string(bytes));
}

}  // namespace hvd_conformance
