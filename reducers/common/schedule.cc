#include "schedule.h"

#include <algorithm>

#include "horovod_plugin/status_text.h"

using hvd_plugin::status_text;

namespace hvd::reducers {

void Schedule::reset(const ScheduleContext& context) {
  ctx_ = context;
  ops_.clear();
  edges_.clear();
  successor_begin_.clear();
  successors_.clear();
  ready_messages_.clear();
  ready_local_.clear();
  retry_.clear();
  local_head_ = 0;
  in_flight_.clear();
  finished_ = 0;
  started_ = false;
  failed_ = HVD_OK;
  failure_ = hvd_completion{};
  message_.clear();
  abort_.store(0);
}

Schedule::Op Schedule::add(const Step& step) {
  ops_.push_back(step);
  return static_cast<Op>(ops_.size() - 1);
}

Schedule::Op Schedule::send(int32_t peer, const void* buf, size_t bytes,
                            uint32_t step) {
  return add({kSend, peer, step % kSteps, nullptr, buf, nullptr, bytes, 0,
              nullptr, 0});
}

Schedule::Op Schedule::recv(int32_t peer, void* buf, size_t bytes,
                            uint32_t step) {
  return add({kRecv, peer, step % kSteps, buf, nullptr, nullptr, bytes, 0,
              nullptr, 0});
}

Schedule::Op Schedule::reduce(void* dst, const void* a, const void* b,
                              size_t count) {
  return add({kReduce, -1, 0, dst, a, b, count, 0, nullptr, 0});
}

Schedule::Op Schedule::copy(void* dst, const void* src, size_t bytes) {
  return add({kCopy, -1, 0, dst, src, nullptr, bytes, 0, nullptr, 0});
}

Schedule::Op Schedule::scale(void* buf, size_t count, double factor) {
  return add({kScale, -1, 0, buf, nullptr, nullptr, count, factor, nullptr, 0});
}

Schedule::Op Schedule::call(LocalFn fn, void* ctx, const void* arg) {
  return add({kCall, -1, 0, ctx, arg, nullptr, 0, 0, fn, 0});
}

Schedule::Op Schedule::join() {
  return add({kJoin, -1, 0, nullptr, nullptr, nullptr, 0, 0, nullptr, 0});
}

Schedule::Op Schedule::join_since(Op first) {
  const Op end = static_cast<Op>(ops_.size());
  const Op all = join();
  for (Op op = first; op < end; ++op) after(all, op);
  return all;
}

void Schedule::after(Op op, Op before) {
  if (op == kNone || before == kNone || op == before) return;
  edges_.emplace_back(before, op);
}

void Schedule::start() {
  const size_t n = ops_.size();
  // Successor lists, grouped by predecessor (a counting sort of the edges).
  successor_begin_.assign(n + 1, 0);
  for (const auto& [before, op] : edges_) {
    ++successor_begin_[before + 1];
    ++ops_[op].waiting;
  }
  for (size_t i = 0; i < n; ++i) successor_begin_[i + 1] += successor_begin_[i];
  successors_.resize(edges_.size());
  cursor_.assign(successor_begin_.begin(), successor_begin_.end() - 1);
  for (const auto& [before, op] : edges_) successors_[cursor_[before]++] = op;
  ready_messages_.reserve(n);
  ready_local_.reserve(n);
  retry_.reserve(n);
  in_flight_.reserve(n);
  for (Op op = 0; op < n; ++op) {
    if (ops_[op].waiting == 0) make_ready(op);
  }
  started_ = true;
}

void Schedule::make_ready(Op op) {
  (is_message(ops_[op].kind) ? ready_messages_ : ready_local_).push_back(op);
}

void Schedule::finish(Op op) {
  ++finished_;
  for (uint32_t i = successor_begin_[op]; i < successor_begin_[op + 1]; ++i) {
    const Op next = successors_[i];
    if (--ops_[next].waiting == 0) make_ready(next);
  }
}

int32_t Schedule::world_rank(int32_t team_rank) const {
  if (ctx_.team == nullptr || ctx_.team->world_ranks == nullptr ||
      team_rank < 0 || team_rank >= ctx_.team->size) {
    return team_rank;
  }
  return ctx_.team->world_ranks[team_rank];
}

std::string Schedule::describe(const Step& step) const {
  std::string what;
  switch (step.kind) {
    case kSend:
      what = "send of " + std::to_string(step.size) + " bytes to rank ";
      break;
    case kRecv:
      what = "receive of " + std::to_string(step.size) + " bytes from rank ";
      break;
    case kReduce:
      return "reduction of " + std::to_string(step.size) + " elements";
    case kCopy:
      return "copy of " + std::to_string(step.size) + " bytes";
    case kScale:
      return "scaling of " + std::to_string(step.size) + " elements";
    case kCall:
      return "local step";
    case kJoin:
      return "join";
  }
  return what + std::to_string(world_rank(step.peer)) + " (step " +
         std::to_string(step.tag) + ")";
}

hvd_status Schedule::fail(hvd_status status, int32_t world_peer,
                          std::string message) {
  failed_ = status;
  failure_.struct_size = sizeof failure_;
  failure_.status = status;
  failure_.peer = world_peer;
  failure_.bytes = 0;
  message_ = std::move(message);
  return status;
}

bool Schedule::poll() {
  bool moved = false;
  for (size_t i = 0; i < in_flight_.size() && failed_ == HVD_OK;) {
    const InFlight flight = in_flight_[i];
    const Step& step = ops_[flight.op];
    int32_t done = 0;
    hvd_completion c{};
    c.struct_size = sizeof c;
    c.peer = -1;
    const hvd_status tested =
        ctx_.p2p_api->test(ctx_.p2p, flight.request, &done, &c);
    if (tested != HVD_OK) {
      fail(tested, world_rank(step.peer),
           describe(step) + ": test failed: " + status_text(tested));
      return moved;
    }
    if (!done) {
      ++i;
      continue;
    }
    in_flight_[i] = in_flight_.back();
    in_flight_.pop_back();
    if (c.status != HVD_OK) {
      fail(c.status, c.peer >= 0 ? c.peer : world_rank(step.peer),
           describe(step) + " failed: " + status_text(c.status));
      return moved;
    }
    if (step.kind == kRecv && c.bytes != step.size) {
      fail(HVD_ERR_MISMATCH, world_rank(step.peer),
           describe(step) + ": got " + std::to_string(c.bytes) +
               " bytes; the ranks disagree on the layout");
      return moved;
    }
    finish(flight.op);
    moved = true;
  }
  return moved;
}

bool Schedule::post() {
  bool moved = false;
  // Messages refused for back-pressure go first, in their order.
  std::vector<Op>& queue = ready_messages_;
  if (!retry_.empty()) {
    queue.insert(queue.begin(), retry_.begin(), retry_.end());
    retry_.clear();
  }
  for (size_t i = 0; i < queue.size(); ++i) {
    const Op op = queue[i];
    const Step& step = ops_[op];
    hvd_p2p_request* request = nullptr;
    const hvd_status posted =
        step.kind == kSend ? ctx_.p2p_api->isend(ctx_.p2p, step.peer, step.a,
                                                 step.size, step.tag, &request)
                           : ctx_.p2p_api->irecv(ctx_.p2p, step.peer, step.dst,
                                                 step.size, step.tag, &request);
    if (posted == HVD_AGAIN) {
      retry_.push_back(op);
      continue;
    }
    if (posted != HVD_OK) {
      fail(posted, world_rank(step.peer),
           describe(step) + ": " + status_text(posted));
      queue.clear();
      return moved;
    }
    in_flight_.push_back({op, request});
    moved = true;
  }
  queue.clear();
  return moved;
}

bool Schedule::run_local() {
  if (local_head_ == ready_local_.size()) return false;
  const Op op = ready_local_[local_head_++];
  if (local_head_ == ready_local_.size()) {
    ready_local_.clear();
    local_head_ = 0;
  }
  const Step& s = ops_[op];
  hvd_status status = HVD_OK;
  const hvd_device_api* d = ctx_.device;
  switch (s.kind) {
    case kReduce:
      status = d->reduce(d->ctx, ctx_.memory, ctx_.dtype, ctx_.op, s.dst, s.a,
                         s.b, s.size, nullptr);
      break;
    case kCopy:
      if (s.size > 0 && s.dst != s.a) {
        status = d->memcpy_async(d->ctx, s.dst, ctx_.memory, s.a, ctx_.memory,
                                 s.size, nullptr);
      }
      break;
    case kScale:
      status = d->scale(d->ctx, ctx_.memory, ctx_.dtype, s.dst, s.size,
                        s.factor, nullptr);
      break;
    case kCall:
      status = s.fn(s.dst, s.a);
      break;
    default:
      break;
  }
  if (status != HVD_OK) {
    fail(status, -1, describe(s) + " failed: " + status_text(status));
    return false;
  }
  finish(op);
  return true;
}

hvd_status Schedule::progress(hvd_completion* out) {
  if (failed_ == HVD_OK) {
    for (;;) {
      const uint64_t abort = abort_.load(std::memory_order_acquire);
      if (abort != 0) {
        const hvd_status aborted = static_cast<int32_t>(abort >> 32);
        const int32_t peer = static_cast<int32_t>(abort & 0xffffffffu);
        fail(aborted, peer,
             std::string("aborted: ") + status_text(aborted) +
                 (peer >= 0 ? " (rank " + std::to_string(peer) + ")" : ""));
        break;
      }
      bool moved = poll();
      if (failed_ == HVD_OK) moved = post() || moved;
      if (failed_ == HVD_OK) moved = run_local() || moved;
      if (failed_ != HVD_OK || !moved) break;
    }
  }
  if (failed_ != HVD_OK) {
    if (out != nullptr) {
      out->status = failure_.status;
      out->peer = failure_.peer;
      out->bytes = 0;
    }
    return failed_;
  }
  if (finished_ == ops_.size()) return HVD_OK;
  if (in_flight_.empty() && retry_.empty()) {
    return fail(HVD_ERR_INTERNAL, -1,
                "schedule stalled: " + std::to_string(ops_.size() - finished_) +
                    " of " + std::to_string(ops_.size()) +
                    " steps can never start (a dependency cycle)");
  }
  return HVD_AGAIN;
}

void Schedule::abort(hvd_status reason, int32_t peer) {
  if (reason == HVD_OK || reason == HVD_AGAIN) reason = HVD_ERR_ABORTED;
  const uint64_t packed = (uint64_t)(uint32_t)reason << 32 | (uint32_t)peer;
  uint64_t none = 0;
  abort_.compare_exchange_strong(none, packed, std::memory_order_release);
}

bool Schedule::drain() {
  for (size_t i = 0; i < in_flight_.size();) {
    int32_t done = 0;
    hvd_completion c{};
    c.struct_size = sizeof c;
    const hvd_status tested =
        ctx_.p2p_api->test(ctx_.p2p, in_flight_[i].request, &done, &c);
    if (tested == HVD_OK && done) {
      in_flight_[i] = in_flight_.back();
      in_flight_.pop_back();
    } else {
      ++i;
    }
  }
  return in_flight_.empty();
}

}  // namespace hvd::reducers
