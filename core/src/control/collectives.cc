// gather (up the tree to rank 0) and broadcast (down from it), on the
// caller's thread.
#include "control/impl.h"

namespace hvd {

using control::FrameType;
using Part = control::FrameWriter::Part;

namespace {

// Marks the caller busy, so the monitor leaves the sockets to it.
class CallScope {
 public:
  CallScope(std::atomic<bool>& in_call, std::atomic<uint64_t>& calls)
      : in_call_(in_call) {
    in_call_.store(true);
    calls.fetch_add(1);
  }
  ~CallScope() { in_call_.store(false); }

 private:
  std::atomic<bool>& in_call_;
};

[[noreturn]] void out_of_order(int peer, const char* what, uint64_t theirs,
                               uint64_t ours) {
  throw Error(HVD_ERR_INTERNAL,
              "control plane: rank " + std::to_string(peer) + " sent " + what +
                  " #" + std::to_string(theirs) + " while this rank is at #" +
                  std::to_string(ours) +
                  ": ranks called gather/broadcast in different orders");
}

}  // namespace

std::vector<std::vector<uint8_t>> ControlPlane::Impl::gather(
    const std::vector<uint8_t>& mine, Clock::time_point deadline,
    const Meanwhile& meanwhile) {
  CallScope call(in_call_, calls_);
  std::unique_lock<std::mutex> io(io_mutex_);
  if (failed_.load()) throw_failure();
  uint64_t sequence = ++gather_sequence_;
  bundle_.clear();
  control::append_gather_entry(bundle_, rank_, mine.data(), mine.size());

  // Children's bundles are merged as they arrive; `taken` is a bit per child.
  uint64_t taken = 0;
  const uint64_t all =
      children_.size() >= 64 ? ~0ull : (1ull << children_.size()) - 1;
  auto take_ready = [&] {
    for (size_t i = 0; i < children_.size(); ++i) {
      if (taken & (1ull << i)) continue;
      Link& child = *children_[i];
      if (child.inbox.empty()) {
        if (!child.open()) throw_link_gone(child);
        continue;
      }
      InboundMessage& message = child.inbox.front();
      if (message.sequence != sequence)
        out_of_order(child.peer, "gather", message.sequence, sequence);
      bundle_.insert(bundle_.end(), message.data.begin(), message.data.end());
      recycle(std::move(message.data));
      child.inbox.pop_front();
      taken |= 1ull << i;
    }
    return taken == all;
  };
  wait_until(
      io, take_ready, nullptr, deadline,
      [&] {
        std::string missing;
        for (size_t i = 0; i < children_.size(); ++i)
          if (!(taken & (1ull << i)))
            missing += (missing.empty() ? "" : ", ") +
                       describe(children_[i]->peer, children_[i]->host);
        return "the gather from " + missing;
      },
      meanwhile);

  if (parent_) {
    uint8_t header[8];
    control::put_u64(header, sequence);
    Part parts[2] = {{header, sizeof header}, {bundle_.data(), bundle_.size()}};
    send_frame(io, *parent_, FrameType::gather, parts, 2, deadline);
    return {};
  }

  std::vector<std::vector<uint8_t>> result;
  if (!control::decode_gather_bundle(bundle_.data(), bundle_.size(), size_,
                                     &result))
    throw Error(HVD_ERR_INTERNAL, "control plane: a malformed gather bundle");
  return result;
}

std::vector<uint8_t> ControlPlane::Impl::broadcast(
    const std::vector<uint8_t>& from_root, Clock::time_point deadline,
    const Meanwhile& meanwhile) {
  CallScope call(in_call_, calls_);
  std::unique_lock<std::mutex> io(io_mutex_);
  if (failed_.load()) throw_failure();
  uint64_t sequence = ++broadcast_sequence_;

  std::vector<uint8_t> payload;
  if (!parent_) {
    payload = from_root;
  } else {
    Link& parent = *parent_;
    wait_until(
        io,
        [&] {
          if (!parent.inbox.empty()) return true;
          if (!parent.open()) throw_link_gone(parent);
          return false;
        },
        nullptr, deadline,
        [&] {
          return "the broadcast from " + describe(parent.peer, parent.host);
        },
        meanwhile);
    InboundMessage& message = parent.inbox.front();
    if (message.sequence != sequence)
      out_of_order(parent.peer, "broadcast", message.sequence, sequence);
    payload = std::move(message.data);
    parent.inbox.pop_front();
  }

  uint8_t header[8];
  control::put_u64(header, sequence);
  Part parts[2] = {{header, sizeof header}, {payload.data(), payload.size()}};
  for (Link* child : children_)
    send_frame(io, *child, FrameType::broadcast, parts, 2, deadline);
  return payload;
}

}  // namespace hvd
