#include "direct_allreduce.h"

#include <gloo/types.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace hvd_gloo {

namespace {

using Buffer = WaitSet::Buffer;
using Millis = std::chrono::milliseconds;

// Up to this many bytes received per rank, one round (latency first);
// beyond it two. Tensors up to kDirectBytes run here: measured on 2 ranks
// over loopback, this beats handing Gloo's ring to the comm's thread and
// back at every size up to 64 MiB, but the caller's thread is blocked for
// the whole transfer, so larger tensors keep going to the comm's thread
// and the core overlaps its copies with them.
constexpr uint64_t kOneRoundBytes = 64 * 1024;
constexpr uint64_t kDirectBytes = 4 << 20;

// Slots of these exchanges; Gloo's own collectives use prefixes 1 to 8.
constexpr uint8_t kFirstRoundPrefix = 0x48;
constexpr uint8_t kSecondRoundPrefix = 0x49;

// Watches the buffers; at the end, closes the pairs unless it finished.
class Watch {
 public:
  Watch(gloo::Context& context, WaitSet& waits,
        std::initializer_list<Buffer*> buffers)
      : context_(context), waits_(waits) {
    waits_.watch(buffers);
  }
  ~Watch() {
    waits_.unwatch();
    if (!done_) context_.closeConnections();
  }
  void done() { done_ = true; }

 private:
  gloo::Context& context_;
  WaitSet& waits_;
  bool done_ = false;
};

// Waits for `n` receives and then `m` sends on `b`; false when interrupted.
bool await(Buffer* b, int receives, int sends, Millis timeout) {
  for (int i = 0; i < receives; ++i) {
    if (!b->waitRecv(nullptr, timeout)) return false;
  }
  for (int i = 0; i < sends; ++i) {
    if (!b->waitSend(nullptr, timeout)) return false;
  }
  return true;
}

// out = part(0) op part(1) op ... op part(size - 1), in that order.
template <typename Part>
void fold(const DirectAllreduce& op, void* out, size_t count, int size,
          Part&& part) {
  op.reduce(out, part(0), part(1), count);
  for (int q = 2; q < size; ++q) op.reduce(out, out, part(q), count);
}

// One round: every input to every rank.
bool exchange(gloo::Context& context, const DirectAllreduce& op, uint32_t tag,
              Millis timeout, std::vector<char>& scratch, WaitSet& waits) {
  const int size = context.size, rank = context.rank;
  const size_t bytes = op.count * op.element_size;
  const uint64_t slot = gloo::Slot::build(kFirstRoundPrefix, tag);
  scratch.resize(static_cast<size_t>(size) * bytes);
  char* parts = scratch.data();
  // In place, this rank's input is overwritten by the fold; beyond two
  // ranks the fold still needs it after that, so it is set aside.
  const char* own = static_cast<const char*>(op.send);
  if (op.send == op.recv && size > 2) {
    std::memcpy(parts + rank * bytes, op.send, bytes);
    own = parts + rank * bytes;
  }
  auto sending = context.createUnboundBuffer(const_cast<char*>(own), bytes);
  auto receiving = context.createUnboundBuffer(parts, scratch.size());
  Watch watch(context, waits, {sending.get(), receiving.get()});
  for (int q = 0; q < size; ++q) {
    if (q != rank) receiving->recv(q, slot, q * bytes, bytes);
  }
  for (int q = 0; q < size; ++q) {
    if (q != rank) sending->send(q, slot, 0, bytes);
  }
  if (!await(receiving.get(), size - 1, 0, timeout) ||
      !await(sending.get(), 0, size - 1, timeout)) {
    return false;
  }
  watch.done();
  fold(op, op.recv, op.count, size, [&](int q) -> const void* {
    return q == rank ? own : parts + q * bytes;
  });
  return true;
}

// Two rounds: rank q reduces chunk q of every input, then sends it to all.
bool scatter_gather(gloo::Context& context, const DirectAllreduce& op,
                    uint32_t tag, Millis timeout, std::vector<char>& scratch,
                    WaitSet& waits) {
  const int size = context.size, rank = context.rank;
  const size_t es = op.element_size;
  auto begin = [&](int q) { return op.count * static_cast<size_t>(q) / size; };
  auto length = [&](int q) { return begin(q + 1) - begin(q); };
  size_t widest = 0;
  for (int q = 0; q < size; ++q) widest = std::max(widest, length(q));
  const size_t stride = widest * es, mine = length(rank);
  scratch.resize(static_cast<size_t>(size) * stride);
  char* parts = scratch.data();
  char* out = static_cast<char*>(op.recv);
  const char* in = static_cast<const char*>(op.send);
  const char* own = in + begin(rank) * es;
  if (op.send == op.recv && size > 2) {
    std::memcpy(parts + rank * stride, own, mine * es);
    own = parts + rank * stride;
  }
  const uint64_t first = gloo::Slot::build(kFirstRoundPrefix, tag);
  const uint64_t second = gloo::Slot::build(kSecondRoundPrefix, tag);
  const size_t bytes = op.count * es;
  auto input = context.createUnboundBuffer(const_cast<char*>(in), bytes);
  auto pieces = context.createUnboundBuffer(parts, scratch.size());
  auto output = context.createUnboundBuffer(out, bytes);
  Watch watch(context, waits, {input.get(), pieces.get(), output.get()});
  // Both rounds' receives are posted first, so no send waits to learn of
  // its receive. In place, a reduced chunk q lands where this rank's input
  // chunk q was: rank q sends it only once it has that input, all of it.
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    pieces->recv(q, first, q * stride, mine * es);
    output->recv(q, second, begin(q) * es, length(q) * es);
  }
  for (int q = 0; q < size; ++q) {
    if (q != rank) input->send(q, first, begin(q) * es, length(q) * es);
  }
  if (!await(pieces.get(), size - 1, 0, timeout) ||
      !await(input.get(), 0, size - 1, timeout)) {
    return false;
  }
  fold(op, out + begin(rank) * es, mine, size, [&](int q) -> const void* {
    return q == rank ? own : parts + q * stride;
  });
  for (int q = 0; q < size; ++q) {
    if (q != rank) output->send(q, second, begin(rank) * es, mine * es);
  }
  if (!await(output.get(), size - 1, size - 1, timeout)) return false;
  watch.done();
  return true;
}

}  // namespace

void WaitSet::watch(std::initializer_list<Buffer*> buffers) {
  std::lock_guard<std::mutex> lock(mu_);
  buffers_ = {};
  std::copy(buffers.begin(), buffers.end(), buffers_.begin());
  if (interrupted_) abort_waits();
}

void WaitSet::unwatch() {
  std::lock_guard<std::mutex> lock(mu_);
  buffers_ = {};
}

void WaitSet::interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = true;
  abort_waits();
}

void WaitSet::abort_waits() {
  for (Buffer* b : buffers_) {
    if (b == nullptr) continue;
    b->abortWaitRecv();
    b->abortWaitSend();
  }
}

bool direct_allreduce_fits(uint64_t bytes) { return bytes <= kDirectBytes; }

bool direct_allreduce(gloo::Context& context, const DirectAllreduce& op,
                      uint32_t tag, Millis timeout, std::vector<char>& scratch,
                      WaitSet& waits) {
  const int size = context.size;
  const size_t bytes = op.count * op.element_size;
  if (size == 1 || bytes == 0) {
    if (op.send != op.recv && bytes > 0) std::memcpy(op.recv, op.send, bytes);
    return true;
  }
  if (bytes * static_cast<uint64_t>(size - 1) <= kOneRoundBytes ||
      op.count < static_cast<size_t>(size)) {
    return exchange(context, op, tag, timeout, scratch, waits);
  }
  return scatter_gather(context, op, tag, timeout, scratch, waits);
}

}  // namespace hvd_gloo
