#include "comm.h"

#include <signal.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/host_access.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/enums.h"
#include "names.h"
#include "transport.h"
#include "wake_socket.h"

namespace hvd_shm {

using hvd_plugin::fail;
using hvd_plugin::refuse;

namespace {

// Far longer than a store stays in a processor's store buffer (a context
// switch or a VM exit drains it at once).
constexpr std::chrono::microseconds kDrainGrace{3};

}  // namespace

Comm::Comm(Transport& transport, const hvd_team& team, std::string key)
    : t_(transport),
      key_(std::move(key)),
      members_(team.world_ranks, team.world_ranks + team.size),
      process_set_(team.process_set),
      rank_(team.rank),
      size_(team.size),
      oversubscribed_(team.local_size > get_nprocs()) {}

Comm::~Comm() { shut_down(); }

// ---- creation --------------------------------------------------------------

hvd_status Comm::create() {
  if (ready_) return HVD_OK;
  if (hvd_status r = abort_.reason(); r != HVD_OK) return refusal();
  const hvd_host* host = t_.host();
  if (!segment_ && rank_ == 0) {
    const Options& o = t_.options();
    std::string name = next_name('k');
    segment_ = Segment::create(
        name, comm_segment_bytes(size_, o.coll_slot_bytes, o.one_shot_max),
        true);
    auto* h = new (segment_->base()) CommHeader{};
    h->magic = kCommMagic;
    h->version = kCommVersion;
    h->size = size_;
    h->slot_bytes = o.coll_slot_bytes;
    h->one_shot_max = o.one_shot_max;
    h->attached.store(0, std::memory_order_relaxed);
    for (int32_t r = 0; r < size_; ++r) {
      new (static_cast<uint8_t*>(segment_->base()) + sizeof(CommHeader) +
           r * sizeof(RankControl)) RankControl{};
    }
    attach();
    hvd_status s = host->bootstrap_put(host->ctx, key_.c_str(), name.c_str(),
                                       name.size() + 1);
    if (s != HVD_OK) {
      fail(s, "shm: publishing the collectives segment under '" + key_ +
                  "' failed");
    }
  }
  if (!segment_) {
    char name[256] = {};
    size_t len = sizeof(name) - 1;
    hvd_status s = host->bootstrap_get(host->ctx, members_[0], key_.c_str(),
                                       name, &len, 0);
    if (s == HVD_ERR_NOT_FOUND || s == HVD_ERR_TIMEOUT || s == HVD_AGAIN) {
      return HVD_AGAIN;
    }
    if (s != HVD_OK) {
      fail(s, "shm: reading the collectives segment name '" + key_ +
                  "' of rank " + std::to_string(members_[0]) + " failed");
    }
    segment_ = Segment::open(name);
    auto* h = static_cast<CommHeader*>(segment_->base());
    if (segment_->size() < sizeof(CommHeader) || h->magic != kCommMagic ||
        h->version != kCommVersion || h->size != size_ ||
        segment_->size() !=
            comm_segment_bytes(size_, h->slot_bytes, h->one_shot_max)) {
      fail(HVD_ERR_MISMATCH, "shm: collectives segment " + std::string(name) +
                                 " is not one for a team of " +
                                 std::to_string(size_));
    }
    attach();
  }
  if (header_->attached.load(std::memory_order_acquire) < size_) {
    return HVD_AGAIN;
  }
  if (rank_ == 0) segment_->unlink();
  segment_->close_fd();
  ready_ = true;
  hvd_transport_common::log(
      host, HVD_LOG_DEBUG,
      "shm: native collectives of process set " + std::to_string(process_set_) +
          " on " + std::to_string(size_) + " rank(s): slots of " +
          std::to_string(slot_bytes_) + " bytes, one-shot allreduce up to " +
          std::to_string(one_shot_max_) + " bytes" +
          (oversubscribed_ ? ", more ranks than processors" : ""));
  return HVD_OK;
}

void Comm::attach() {
  auto* base = static_cast<uint8_t*>(segment_->base());
  header_ = reinterpret_cast<CommHeader*>(base);
  control_ = reinterpret_cast<RankControl*>(base + sizeof(CommHeader));
  data_ = base + comm_data_offset(size_);
  slot_bytes_ = header_->slot_bytes;
  one_shot_max_ = header_->one_shot_max;
  small_slot_bytes_ = comm_small_slot_bytes(one_shot_max_);
  member_bytes_ = comm_member_bytes(slot_bytes_, one_shot_max_);
  lanes_[0].slot_bytes = small_slot_bytes_;
  lanes_[1].slot_bytes = slot_bytes_;
  wake_ = &t_.wake_socket();
  RankControl& mine = control_[rank_];
  mine.pid = static_cast<uint32_t>(getpid());
  std::snprintf(mine.wake_name, sizeof(mine.wake_name), "%s",
                wake_->name().c_str());
  header_->attached.fetch_add(1, std::memory_order_acq_rel);
  attached_ = true;
}

// ---- posting ---------------------------------------------------------------

hvd_status Comm::refusal() const {
  int32_t peer = -1;
  hvd_status r = abort_.reason(&peer);
  return refuse(
      r,
      "shm: the collectives communicator was aborted" +
          std::string(peer >= 0 ? " (rank " + std::to_string(peer) + ")" : ""));
}

Comm::Op* Comm::new_op(Kind kind, int lane, Request** out) {
  if (out == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "shm: req is NULL");
  if (!ready_) fail(HVD_ERR_INVALID_ARGUMENT, "shm: comm_create unfinished");
  Op* op;
  if (free_ops_.empty()) {
    ops_.push_back(std::make_unique<Op>());
    op = ops_.back().get();
  } else {
    op = free_ops_.back();
    free_ops_.pop_back();
  }
  op->kind = kind;
  op->lane = lane;
  op->req = t_.new_request(RequestKind::kCollective, nullptr);
  op->req->comm = this;
  op->send = nullptr;
  op->recv = nullptr;
  op->count = 0;
  op->esize = 1;
  op->root = 0;
  op->streaming = false;
  op->rounds = 1;
  op->round = 0;
  op->phase = 0;
  op->waiting = false;
  *out = op->req;
  return op;
}

hvd_status Comm::start(Op* op) {
  Lane& lane = lanes_[op->lane];
  op->first_round = lane.next_round;
  lane.next_round += op->rounds;
  lane.queue.push_back(op);
  // At the head, its first phase runs now (the post checked for an abort).
  if (lane.queue.front() == op && advance(*op)) {
    lane.queue.pop_front();
    finish(op, HVD_OK, -1);
  }
  return HVD_OK;
}

hvd_status Comm::allreduce(const void* send, void* recv, size_t count,
                           hvd_dtype dtype, hvd_reduce_op op, Request** out) {
  if (abort_.tripped()) return refusal();
  size_t esize = hvd_plugin::dtype_size(dtype);
  if (esize == 0) fail(HVD_ERR_INVALID_ARGUMENT, "shm: unknown dtype");
  uint64_t bytes = count * esize;
  Kind kind = bytes <= kInlineBytes    ? Kind::kInline
              : bytes <= one_shot_max_ ? Kind::kOneShot
                                       : Kind::kTwoShot;
  Op* o = new_op(kind, kind == Kind::kTwoShot ? 1 : 0, out);
  o->send = static_cast<const uint8_t*>(send);
  o->recv = static_cast<uint8_t*>(recv);
  o->count = count;
  o->esize = esize;
  o->dtype = dtype;
  o->op = op;
  o->streaming = bytes >= t_.options().streaming_threshold;
  if (count == 0 || size_ == 1) {
    if (count != 0 && send != recv) std::memcpy(recv, send, bytes);
    finish(o, HVD_OK, -1);
    return HVD_OK;
  }
  if (o->kind == Kind::kTwoShot) {
    // A round fills a slot; its shares are cache-line multiples.
    uint64_t align = 64 / esize;
    uint64_t unit = align * static_cast<uint64_t>(size_);
    o->round_elems =
        std::max<uint64_t>(unit, slot_bytes_ / esize / unit * unit);
    o->rounds = (count + o->round_elems - 1) / o->round_elems;
  }
  return start(o);
}

hvd_status Comm::broadcast(void* buf, size_t count, hvd_dtype dtype,
                           int32_t root, Request** out) {
  if (abort_.tripped()) return refusal();
  size_t esize = hvd_plugin::dtype_size(dtype);
  if (esize == 0) fail(HVD_ERR_INVALID_ARGUMENT, "shm: unknown dtype");
  if (root < 0 || root >= size_) {
    fail(HVD_ERR_INVALID_ARGUMENT,
         "shm: broadcast root " + std::to_string(root) + " outside a team of " +
             std::to_string(size_));
  }
  const uint64_t bytes = count * esize;
  Op* o = new_op(Kind::kBroadcast, bytes <= small_slot_bytes_ ? 0 : 1, out);
  o->recv = static_cast<uint8_t*>(buf);
  o->count = count;
  o->esize = esize;
  o->root = root;
  o->streaming = bytes >= t_.options().streaming_threshold;
  if (count == 0 || size_ == 1) {
    finish(o, HVD_OK, -1);
    return HVD_OK;
  }
  o->rounds = (bytes + lane_slot_bytes(*o) - 1) / lane_slot_bytes(*o);
  return start(o);
}

hvd_status Comm::allgatherv(const void* send, size_t send_count, void* recv,
                            const size_t* recv_counts,
                            const size_t* recv_displs, hvd_dtype dtype,
                            Request** out) {
  if (abort_.tripped()) return refusal();
  size_t esize = hvd_plugin::dtype_size(dtype);
  if (esize == 0) fail(HVD_ERR_INVALID_ARGUMENT, "shm: unknown dtype");
  if (recv_counts == nullptr || recv_displs == nullptr) {
    fail(HVD_ERR_INVALID_ARGUMENT, "shm: allgatherv without counts");
  }
  if (recv_counts[rank_] != send_count) {
    fail(HVD_ERR_INVALID_ARGUMENT,
         "shm: allgatherv: send_count " + std::to_string(send_count) +
             " differs from recv_counts[" + std::to_string(rank_) + "] " +
             std::to_string(recv_counts[rank_]));
  }
  uint64_t largest = 0, total = 0;
  for (int32_t r = 0; r < size_; ++r) {
    largest = std::max<uint64_t>(largest, recv_counts[r] * esize);
    total += recv_counts[r] * esize;
  }
  Op* o = new_op(Kind::kAllgatherv, largest <= small_slot_bytes_ ? 0 : 1, out);
  o->send = static_cast<const uint8_t*>(send);
  o->recv = static_cast<uint8_t*>(recv);
  o->count = send_count;
  o->esize = esize;
  o->counts.assign(recv_counts, recv_counts + size_);
  o->displs.assign(recv_displs, recv_displs + size_);
  o->streaming = total >= t_.options().streaming_threshold;
  if (size_ == 1) {
    if (send_count != 0) {
      std::memmove(o->recv + o->displs[0] * esize, send, send_count * esize);
    }
    finish(o, HVD_OK, -1);
    return HVD_OK;
  }
  const uint64_t chunk = lane_slot_bytes(*o);
  o->rounds = std::max<uint64_t>(1, (largest + chunk - 1) / chunk);
  return start(o);
}

hvd_status Comm::barrier(Request** out) {
  if (abort_.tripped()) return refusal();
  Op* o = new_op(Kind::kBarrier, 0, out);
  if (size_ == 1) {
    finish(o, HVD_OK, -1);
    return HVD_OK;
  }
  return start(o);
}

// ---- progress --------------------------------------------------------------

void Comm::publish(Lane& lane, InlineSlot* line) {
  const uint64_t step = ++lane.step;
  // Waiters on an inline step read the line alone; the lane's step line
  // catches up at the next phase published without one (waiters compare
  // with >=, and steps only grow).
  if (line != nullptr) {
    line->step.store(step, std::memory_order_release);
  } else {
    control_[rank_].steps[&lane - lanes_].step.store(step,
                                                     std::memory_order_release);
  }
  // No fence between the store and the loads of the flags (a fence would
  // stall here until the peers give up the step's cache line): a peer that
  // raises its flag as we publish watches our step for kDrainGrace before
  // it sleeps (arm), longer than a store takes to leave the store buffer.
  for (int32_t r = 0; r < size_; ++r) {
    if (r != rank_ &&
        control_[r].sleeping.load(std::memory_order_relaxed) != 0) {
      wake_->wake(control_[r].wake_name);
    }
  }
}

bool Comm::arrived(int lane, uint64_t target) const {
  for (int32_t r = 0; r < size_; ++r) {
    if (r != rank_ &&
        control_[r].steps[lane].step.load(std::memory_order_acquire) < target) {
      return false;
    }
  }
  return true;
}

bool Comm::arrived(const Op& op) const {
  if (op.kind != Kind::kInline) return arrived(op.lane, op.target);
  const uint64_t p = parity(op);
  for (int32_t r = 0; r < size_; ++r) {
    if (r != rank_ &&
        inline_slot(r, p).step.load(std::memory_order_acquire) < op.target) {
      return false;
    }
  }
  return true;
}

bool Comm::advance(Op& op) {
  const uint32_t n = phases(op);
  while (op.round < op.rounds) {
    if (!op.waiting) {
      run_phase(op);
      Lane& lane = lanes_[op.lane];
      publish(lane, op.kind == Kind::kInline ? &inline_slot(rank_, parity(op))
                                             : nullptr);
      op.target = lane.step;
      op.waiting = true;
    }
    if (!arrived(op)) return false;
    op.waiting = false;
    if (op.rounds > 1 || n > 1) last_sync_ = std::chrono::steady_clock::now();
    if (++op.phase == n) {
      finish_round(op);
      op.phase = 0;
      ++op.round;
    }
  }
  return true;
}

bool Comm::progress() {
  if (abort_.pending()) {
    abort_.apply([this](hvd_status reason, int32_t peer) {
      fail_all(reason, peer, hvd_plugin::abort_text(reason, peer));
    });
    return true;
  }
  bool moved = false;
  for (Lane& lane : lanes_) {
    while (!lane.queue.empty()) {
      Op* op = lane.queue.front();
      const uint64_t before = lane.step;
      if (!advance(*op)) {
        moved = moved || lane.step != before;
        break;
      }
      lane.queue.pop_front();
      finish(op, HVD_OK, -1);
      moved = true;
    }
  }
  return moved;
}

bool Comm::ready() const {
  if (abort_.pending()) return true;
  for (const Lane& lane : lanes_) {
    if (lane.queue.empty()) continue;
    const Op& head = *lane.queue.front();
    if (!head.waiting || arrived(head)) return true;
  }
  return false;
}

bool Comm::patient(std::chrono::steady_clock::time_point now,
                   std::chrono::nanoseconds window) {
  if (idle() || oversubscribed_ || !sleepy_) return false;
  if (first_wait_ == std::chrono::steady_clock::time_point{}) first_wait_ = now;
  return now - first_wait_ < window;
}

void Comm::finish(Op* op, hvd_status status, int32_t peer) {
  if (status == HVD_OK && op->rounds > 0) {
    sleepy_ = slept_;
    slept_ = false;
    first_wait_ = {};
  }
  uint64_t bytes = op->kind == Kind::kBarrier ? 0 : op->count * op->esize;
  op->req->comm = nullptr;
  t_.finish(op->req, status, peer, status == HVD_OK ? bytes : 0);
  op->req = nullptr;
  free_ops_.push_back(op);
}

void Comm::fail_all(hvd_status status, int32_t peer, const std::string& why) {
  if (!idle()) {
    hvd_plugin::set_last_error("shm: collective on " + std::to_string(size_) +
                               " rank(s): " + why);
  }
  for (Lane& lane : lanes_) {
    while (!lane.queue.empty()) {
      Op* op = lane.queue.front();
      lane.queue.pop_front();
      finish(op, status, peer);
    }
  }
}

// ---- waiting and failure ---------------------------------------------------

bool Comm::arm() {
  if (idle()) return false;
  check_peers_alive();
  if (abort_.tripped()) return true;
  control_[rank_].sleeping.store(1, std::memory_order_relaxed);
  sleeping_ = true;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // A member that published just before our flag became visible may have
  // read it as down: its step reaches us within the grace (see publish).
  const auto start = std::chrono::steady_clock::now();
  do {
    if (ready()) {
      disarm();
      return true;
    }
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  } while (std::chrono::steady_clock::now() - start < kDrainGrace);
  slept_ = true;
  return false;
}

void Comm::disarm() {
  if (!sleeping_) return;
  control_[rank_].sleeping.store(0, std::memory_order_relaxed);
  sleeping_ = false;
}

void Comm::check_peers_alive() {
  const uint32_t self = static_cast<uint32_t>(getpid());
  for (int32_t r = 0; r < size_; ++r) {
    uint32_t pid = control_[r].pid;
    if (r == rank_ || pid == self || pid == 0) continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      abort(HVD_ERR_PEER_FAILED, members_[r]);
      return;
    }
  }
}

void Comm::abort(hvd_status reason, int32_t peer) {
  if (abort_.trip(reason, peer)) t_.wake_self();
}

void Comm::shut_down() {
  disarm();
  for (Lane& lane : lanes_) {
    while (!lane.queue.empty()) {
      Op* op = lane.queue.front();
      lane.queue.pop_front();
      finish(op, HVD_ERR_SHUT_DOWN, -1);
    }
  }
}

}  // namespace hvd_shm
