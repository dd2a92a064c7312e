#include "p2p/engine.h"

#include <poll.h>
#include <sched.h>
#include <time.h>

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "horovod_plugin/enums.h"

// One message of the p2p layer: one or more transport requests (chunks).
struct hvd_p2p_request_s {
  static constexpr uint32_t kMaxWindow = 4;
  hvd::p2p::Link* link = nullptr;
  bool send = false;
  uint8_t* buf = nullptr;
  size_t bytes = 0;
  uint64_t tag = 0;
  hvd_mr* mr = nullptr;
  size_t next_offset = 0;  // start of the next chunk to post
  bool posted_any = false;
  bool ended = false;    // a chunk came short: the message is over
  size_t completed = 0;  // bytes of finished chunks
  uint32_t inflight = 0;
  hvd_request* chunk[kMaxWindow] = {};
  size_t chunk_bytes[kMaxWindow] = {};
  hvd_status status = HVD_OK;
  int32_t peer = -1;
  // A nested collective instead of a message (task set).
  hvd::p2p::NestedTask nested;
  const hvd_p2p_s* nested_root = nullptr;
  hvd_p2p_request_s* next_free = nullptr;
};

namespace hvd::p2p {
namespace {

Engine* engine_of(hvd_p2p* p) { return p->engine; }

const hvd_team* api_team(hvd_p2p* p) { return p->team->view(); }

hvd_status api_isend(hvd_p2p* p, int32_t peer, const void* buf, size_t bytes,
                     uint32_t step, hvd_p2p_request** req) {
  return engine_of(p)->isend(p, peer, buf, bytes, step, req);
}

hvd_status api_irecv(hvd_p2p* p, int32_t peer, void* buf, size_t bytes,
                     uint32_t step, hvd_p2p_request** req) {
  return engine_of(p)->irecv(p, peer, buf, bytes, step, req);
}

hvd_status api_test(hvd_p2p* p, hvd_p2p_request* req, int32_t* done,
                    hvd_completion* out) {
  return engine_of(p)->test(req, done, out);
}

hvd_status api_subteam(hvd_p2p* p, const int32_t* members, int32_t count,
                       hvd_p2p** out) {
  return engine_of(p)->subteam(p, members, count, out);
}

hvd_status api_collective(hvd_p2p* p, const char* reducer,
                          const hvd_coll_args* args, hvd_p2p_request** req) {
  return engine_of(p)->collective(p, reducer, args, req);
}

const hvd_transport_collectives* api_native(hvd_p2p* p, hvd_coll_comm** comm) {
  return engine_of(p)->native(p, comm);
}

hvd_status api_native_test(hvd_p2p* p, hvd_request* req, int32_t* done,
                           hvd_completion* out) {
  return engine_of(p)->native_test(p, req, done, out);
}

// Every field named; NULL: not offered by this core.
const hvd_p2p_api kApi = {
    .struct_size = sizeof(hvd_p2p_api),
    .ext = nullptr,
    .team = api_team,
    .isend = api_isend,
    .irecv = api_irecv,
    .test = api_test,
    .subteam = api_subteam,
    .native = api_native,
    .peer_buffer = nullptr,
    .collective = api_collective,
    .native_test = api_native_test,
};

}  // namespace

Engine::Engine(int32_t world_rank, int32_t world_size, uint64_t epoch)
    : world_rank_(world_rank),
      world_size_(world_size),
      epoch_(epoch),
      links_(world_size),
      gpu_links_(world_size),
      reported_(world_size, false),
      last_activity_(std::chrono::steady_clock::now()) {}

Engine::~Engine() {
  drop_nested(nullptr);
  native_comms_.clear();
  for (std::vector<Link>* links : {&links_, &gpu_links_}) {
    for (Link& link : *links) {
      if (link.conn) link.transport->api().conn_close(link.conn);
    }
  }
  caches_.clear();
  transports_.clear();
}

const hvd_p2p_api* Engine::api() { return &kApi; }

Transport* Engine::add_transport(std::unique_ptr<Transport> transport) {
  Transport* t = transport.get();
  transports_.push_back(std::move(transport));
  caches_.push_back(t->needs_mr() ? std::make_unique<RegistrationCache>(
                                        &t->api(), t->instance(), 64)
                                  : nullptr);
  layouts_.push_back(std::make_unique<TagLayout>(t->properties().tag_bits));
  return t;
}

Transport* Engine::add_gpu_transport(std::unique_ptr<Transport> transport) {
  if (gpu_) {
    throw Error(HVD_ERR_INTERNAL, "p2p: a second gpu transport '" +
                                      transport->name() + "' after '" +
                                      gpu_->name() + "'");
  }
  gpu_ = add_transport(std::move(transport));
  gpu_unavailable_.clear();
  return gpu_;
}

void Engine::add_link(int32_t peer, Transport* transport, hvd_conn* conn) {
  size_t index = 0;
  while (transports_[index].get() != transport) ++index;
  const hvd_transport_properties& props = transport->properties();
  Link& link = (transport == gpu_ ? gpu_links_ : links_).at(peer);
  link.peer = peer;
  link.transport = transport;
  link.conn = conn;
  link.cache = caches_[index].get();
  link.tags = layouts_[index].get();
  link.chunk_bytes =
      props.max_message_bytes ? props.max_message_bytes : UINT64_MAX;
  uint32_t window = props.max_requests ? props.max_requests : 4;
  link.window = std::clamp<uint32_t>(window, 1, hvd_p2p_request_s::kMaxWindow);
}

bool Engine::connected(int32_t peer) const {
  return peer >= 0 && peer < world_size_ && links_[peer].conn != nullptr;
}

bool Engine::gpu_connected(int32_t peer) const {
  return peer >= 0 && peer < world_size_ && gpu_links_[peer].conn != nullptr;
}

bool Engine::needs_registration() const {
  for (const auto& t : transports_) {
    if (t.get() != gpu_ && t->needs_mr()) return true;
  }
  return false;
}

void Engine::register_permanent(const void* buf, size_t bytes) {
  for (size_t i = 0; i < caches_.size(); ++i) {
    if (!caches_[i] || transports_[i].get() == gpu_) continue;
    hvd_status s = caches_[i]->add_permanent(buf, bytes, {HVD_MEM_HOST, 0});
    if (s != HVD_OK) {
      throw Error(s, transports_[i]->error("registering a buffer of " +
                                           std::to_string(bytes) + " bytes"));
    }
  }
}

void Engine::forget_registration(const void* buf, size_t bytes) {
  for (auto& cache : caches_) {
    if (cache) cache->forget(buf, bytes);
  }
}

void Engine::set_failure_reporter(
    std::function<void(int32_t, const std::string&)> reporter) {
  reporter_ = std::move(reporter);
}

void Engine::reset_context(hvd_p2p_s* context, const Team* team,
                           uint32_t process_set, uint64_t sequence) {
  if (!nested_live_.empty()) drop_nested(context);
  context->engine = this;
  context->team = team;
  context->root = context;
  context->tag = TagFields{};
  context->tag.process_set = process_set;
  context->tag.sequence = sequence;
  context->tag.epoch = epoch_;
  context->subteams_used = 0;
  context->memory = {HVD_MEM_HOST, 0};
}

Link& Engine::link_for(hvd_device memory, int32_t peer) {
  return (memory.kind != HVD_MEM_HOST && gpu_ ? gpu_links_ : links_)[peer];
}

hvd_status Engine::isend(hvd_p2p_s* p, int32_t peer, const void* buf,
                         size_t bytes, uint32_t step, hvd_p2p_request_s** out) {
  return post(p, true, peer, const_cast<void*>(buf), bytes, step, out);
}

hvd_status Engine::irecv(hvd_p2p_s* p, int32_t peer, void* buf, size_t bytes,
                         uint32_t step, hvd_p2p_request_s** out) {
  return post(p, false, peer, buf, bytes, step, out);
}

hvd_status Engine::post(hvd_p2p_s* p, bool send, int32_t peer, void* buf,
                        size_t bytes, uint32_t step, hvd_p2p_request_s** out) {
  if (!out || peer < 0 || peer >= p->team->size() || peer == p->team->rank() ||
      (bytes > 0 && !buf) || step > 0xffff) {
    last_error_ = std::string(send ? "isend" : "irecv") + " to team rank " +
                  std::to_string(peer) + " of " +
                  std::to_string(p->team->size()) + " (step " +
                  std::to_string(step) + ", " + std::to_string(bytes) +
                  " bytes): invalid argument";
    return HVD_ERR_INVALID_ARGUMENT;
  }
  int32_t world_peer = p->team->world_rank(peer);
  Link& link = link_for(p->memory, world_peer);
  if (!link.conn && &link == &gpu_links_[world_peer]) {
    last_error_ = gpu_->error(std::string(send ? "isend" : "irecv") +
                              " to rank " + std::to_string(world_peer) +
                              ": [transport] gpu '" + gpu_->name() +
                              "' has no point-to-point connections (it moves " +
                              hvd_plugin::mem_kind_name(p->memory.kind) +
                              " memory through its collectives only)");
    return HVD_ERR_UNSUPPORTED;
  }
  if (!link.conn) {
    last_error_ = "no connection to rank " + std::to_string(world_peer);
    return HVD_ERR_INTERNAL;
  }
  hvd_p2p_request_s* req = take_request();
  req->link = &link;
  req->send = send;
  req->buf = static_cast<uint8_t*>(buf);
  req->bytes = bytes;
  TagFields fields = p->tag;
  fields.step = step;
  req->tag = link.tags->compose(fields);
  if (link.cache) {
    hvd_status s = link.cache->acquire(buf, bytes, p->memory, &req->mr);
    if (s != HVD_OK) {
      last_error_ = link.transport->error("registering " +
                                          std::to_string(bytes) + " bytes");
      give_back(req);
      return s;
    }
  }
  post_chunks(req);
  note_activity();
  *out = req;
  return HVD_OK;
}

void Engine::post_chunks(hvd_p2p_request_s* req) {
  Link& link = *req->link;
  const hvd_transport_api& api = link.transport->api();
  while (req->status == HVD_OK && !req->ended && req->inflight < link.window &&
         (req->next_offset < req->bytes || !req->posted_any)) {
    size_t chunk = static_cast<size_t>(
        std::min<uint64_t>(link.chunk_bytes, req->bytes - req->next_offset));
    hvd_request* r = nullptr;
    uint8_t* at = req->buf ? req->buf + req->next_offset : nullptr;
    hvd_status s = req->send
                       ? api.isend(link.conn, at, chunk, req->tag, req->mr, &r)
                       : api.irecv(link.conn, at, chunk, req->tag, req->mr, &r);
    if (s == HVD_AGAIN) return;
    if (s != HVD_OK) {
      fail(req, s, refused_by(link, s),
           link.transport->error(std::string(req->send ? "isend" : "irecv") +
                                 " of " + std::to_string(chunk) +
                                 " bytes with rank " +
                                 std::to_string(link.peer)));
      return;
    }
    req->chunk[req->inflight] = r;
    req->chunk_bytes[req->inflight] = chunk;
    ++req->inflight;
    req->next_offset += chunk;
    req->posted_any = true;
  }
}

hvd_status Engine::test(hvd_p2p_request_s* req, int32_t* done,
                        hvd_completion* out) {
  *done = 0;
  if (req->nested.task) return test_nested(req, done, out);
  if (req->status == HVD_OK) post_chunks(req);
  Link& link = *req->link;
  const hvd_transport_api& api = link.transport->api();
  uint32_t kept = 0;
  for (uint32_t i = 0; i < req->inflight && req->status == HVD_OK; ++i) {
    int32_t finished = 0;
    hvd_completion c{};
    c.struct_size = sizeof(c);
    c.peer = -1;
    hvd_status s = api.test(req->chunk[i], &finished, &c);
    if (s == HVD_AGAIN) s = HVD_OK;
    if (s == HVD_OK && !finished) {
      req->chunk[kept] = req->chunk[i];
      req->chunk_bytes[kept] = req->chunk_bytes[i];
      ++kept;
      continue;
    }
    hvd_status result = s != HVD_OK ? s : c.status;
    if (result != HVD_OK) {
      fail(req, result, at_fault(link, c.peer),
           link.transport->error(
               std::string(req->send ? "send to" : "receive from") + " rank " +
               std::to_string(link.peer) + " failed (" + status_name(result) +
               ")"));
      break;
    }
    note_activity();
    req->completed += c.bytes;
    if (!req->send && c.bytes < req->chunk_bytes[i]) req->ended = true;
  }
  if (req->status == HVD_OK) {
    req->inflight = kept;
    post_chunks(req);
  }
  bool finished =
      req->status != HVD_OK ||
      (req->inflight == 0 &&
       (req->ended || (req->posted_any && req->next_offset >= req->bytes)));
  if (!finished) return HVD_OK;
  if (out) {
    out->struct_size = sizeof(hvd_completion);
    out->status = req->status;
    out->peer = req->status == HVD_OK ? -1 : req->peer;
    out->bytes = req->completed;
  }
  *done = 1;
  give_back(req);
  return HVD_OK;
}

int32_t Engine::at_fault(const Link& link, int32_t named) const {
  if (named >= 0) return named;
  if (aborted_.load(std::memory_order_acquire)) {
    int32_t culprit = abort_peer_.load(std::memory_order_relaxed);
    if (culprit >= 0) return culprit;
  }
  return link.peer;
}

int32_t Engine::refused_by(const Link& link, hvd_status status) const {
  // Aborted, though not by this engine: the transport aborted itself, and
  // what it refuses now is its own side's doing, not the peer's.
  if (status == HVD_ERR_ABORTED && !aborted_.load(std::memory_order_acquire))
    return world_rank_;
  return at_fault(link, -1);
}

void Engine::fail(hvd_p2p_request_s* req, hvd_status status, int32_t peer,
                  const std::string& message) {
  req->status = status;
  req->peer = peer;
  last_error_ = message;
  if (aborted_ || peer < 0 || peer >= world_size_ || peer == world_rank_) {
    return;
  }
  if (!reported_[peer]) {
    reported_[peer] = true;
    HVD_LOG(ERROR) << message;
    if (reporter_) reporter_(peer, message);
  }
}

hvd_status Engine::subteam(hvd_p2p_s* p, const int32_t* members, int32_t count,
                           hvd_p2p_s** out) {
  hvd_p2p_s* root = p->root;
  size_t index = root->subteams_used;
  try {
    // A cached sub-team is reused when it has the same members in the same
    // order (as world ranks, so a sub-team of a sub-team is told apart).
    bool reuse = index < root->sub_teams.size() &&
                 root->sub_teams[index]->size() == count;
    for (int32_t i = 0; reuse && i < count; ++i) {
      reuse = members[i] >= 0 && members[i] < p->team->size() &&
              root->sub_teams[index]->world_rank(i) ==
                  p->team->world_rank(members[i]);
    }
    if (!reuse) {
      std::unique_ptr<Team> team = p->team->subteam(members, count);
      auto context = std::make_unique<hvd_p2p_s>();
      if (index < root->sub_teams.size()) {
        root->sub_teams[index] = std::move(team);
        root->sub_contexts[index] = std::move(context);
      } else {
        root->sub_teams.push_back(std::move(team));
        root->sub_contexts.push_back(std::move(context));
      }
    }
  } catch (const Error& e) {
    last_error_ = e.what();
    return e.status();
  }
  hvd_p2p_s* sub = root->sub_contexts[index].get();
  sub->engine = this;
  sub->team = root->sub_teams[index].get();
  sub->root = root;
  sub->tag = root->tag;
  sub->tag.subteam = static_cast<uint32_t>(index + 1);
  sub->memory = root->memory;
  root->subteams_used = index + 1;
  *out = sub;
  return HVD_OK;
}

hvd_status Engine::collective(hvd_p2p_s* p, const char* reducer,
                              const hvd_coll_args* args,
                              hvd_p2p_request_s** out) {
  if (!out || !args) {
    last_error_ = "nested collective: args or req is NULL";
    return HVD_ERR_INVALID_ARGUMENT;
  }
  if (!nested_) {
    last_error_ = "nested collectives are not offered here";
    return HVD_ERR_UNSUPPORTED;
  }
  // The nested task's own context: the same members as a fresh sub-team,
  // so its steps and sub-teams get tags apart from the caller's.
  std::vector<int32_t> same(static_cast<size_t>(p->team->size()));
  for (int32_t i = 0; i < p->team->size(); ++i) same[i] = i;
  hvd_p2p_s* context = nullptr;
  hvd_status s = subteam(p, same.data(), p->team->size(), &context);
  if (s != HVD_OK) return s;
  NestedTask task;
  std::string error;
  s = nested_->post(context, reducer ? reducer : "", *args, &task, &error);
  if (s != HVD_OK) {
    last_error_ = "nested collective on " + std::to_string(p->team->size()) +
                  " rank(s): " + error;
    return s;
  }
  hvd_p2p_request_s* req = take_request();
  req->nested = task;
  req->nested_root = p->root;
  nested_live_.push_back(req);
  note_activity();
  *out = req;
  return HVD_OK;
}

hvd_status Engine::test_nested(hvd_p2p_request_s* req, int32_t* done,
                               hvd_completion* out) {
  hvd_completion c{};
  c.struct_size = sizeof(c);
  c.peer = -1;
  hvd_status s = req->nested.api->progress(req->nested.task, &c);
  if (s == HVD_AGAIN) return HVD_OK;
  req->nested.api->task_free(req->nested.task);
  req->nested = NestedTask{};
  nested_live_.erase(std::find(nested_live_.begin(), nested_live_.end(), req));
  if (out) {
    out->struct_size = sizeof(hvd_completion);
    out->status = s;
    out->peer = s == HVD_OK ? -1 : c.peer;
    out->bytes = 0;
  }
  note_activity();
  *done = 1;
  give_back(req);
  return HVD_OK;
}

void Engine::drop_nested(const hvd_p2p_s* root) {
  for (size_t i = 0; i < nested_live_.size();) {
    hvd_p2p_request_s* req = nested_live_[i];
    if (root && req->nested_root != root) {
      ++i;
      continue;
    }
    req->nested.api->abort_task(req->nested.task, HVD_ERR_SHUT_DOWN, -1);
    req->nested.api->task_free(req->nested.task);
    req->nested = NestedTask{};
    nested_live_.erase(nested_live_.begin() + static_cast<ptrdiff_t>(i));
    give_back(req);
  }
}

const hvd_transport_collectives* Engine::native(hvd_p2p_s* p,
                                                hvd_coll_comm** comm) {
  hvd_coll_comm* dummy = nullptr;
  if (!comm) comm = &dummy;
  *comm = nullptr;
  const bool device = p->memory.kind != HVD_MEM_HOST && gpu_;
  hvd_p2p_s::NativeMemo& memo = p->native_memo;
  if (memo.ext && memo.device == device &&
      memo.members == p->team->world_ranks()) {
    *comm = memo.comm;
    p->native_transport = memo.transport;
    return memo.ext;
  }
  // Device memory: the gpu scope's transport, which every rank opened.
  // Otherwise one transport must reach every other member.
  Transport* serving = nullptr;
  if (device) {
    serving = gpu_;
  } else {
    for (int32_t i = 0; i < p->team->size(); ++i) {
      if (i == p->team->rank()) continue;
      const Link& link = links_[p->team->world_rank(i)];
      if (!link.conn || (serving && link.transport != serving)) return nullptr;
      serving = link.transport;
    }
  }
  if (!serving) return nullptr;
  const hvd_transport_collectives* ext =
      native_comms_.get(*p->team, serving, comm, interrupted_);
  if (ext) {
    p->native_transport = serving;
    memo.members = p->team->world_ranks();
    memo.device = device;
    memo.ext = ext;
    memo.comm = *comm;
    memo.transport = serving;
  }
  return ext;
}

hvd_status Engine::native_test(hvd_p2p_s* p, hvd_request* req, int32_t* done,
                               hvd_completion* out) {
  Transport* t = p->native_transport;
  if (!t || !req || !done) {
    last_error_ = "native_test: no native collective was started here";
    return HVD_ERR_INVALID_ARGUMENT;
  }
  hvd_completion c{};
  c.struct_size = sizeof(c);
  c.peer = -1;
  hvd_status s = t->api().test(req, done, &c);
  if (s == HVD_AGAIN) s = HVD_OK;
  if (s != HVD_OK) {
    last_error_ = t->error("native collective");
    return s;
  }
  // The test drove the collective; a manual-progress transport gets the
  // rest of its progress only while the collective waits.
  if (!*done && t->needs_progress() && t->api().progress) {
    t->api().progress(t->instance());
  }
  if (*done) {
    note_activity();
    if (c.status != HVD_OK) {
      last_error_ = t->error(std::string("native collective on ") +
                             std::to_string(p->team->size()) +
                             " rank(s) failed (" + status_name(c.status) + ")");
    }
    if (out) *out = c;
  }
  return HVD_OK;
}

void Engine::progress() {
  for (const auto& t : transports_) {
    if (t->needs_progress() && t->api().progress) {
      t->api().progress(t->instance());
    }
  }
}

void Engine::set_oversubscribed(bool on) {
  oversubscribed_ = on;
  // A rank free to run on several cores yields at once: the peer it waits
  // for may be the one waiting for this core. One pinned to a single core
  // (mpirun binds that way) shares it with whatever else runs there, so it
  // spins briefly first: a yield can hand the core away for a time slice.
  cpu_set_t cpus;
  const bool pinned =
      sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) == 1;
  pure_spin_ =
      pinned ? std::chrono::microseconds(2) : std::chrono::nanoseconds(0);
}

std::span<const pollfd> Engine::wait(std::chrono::nanoseconds max_sleep,
                                     std::span<const int> extra_fds) {
  // The spin is timed from the first wait() after the last activity (the
  // data path only counts activity: a clock read per message costs more
  // than the message), not restarted by each wait(): a rank descheduled
  // during its spin then sleeps at once, which keeps its claim on the
  // scheduler (spinning on through a shared core's time slices made two
  // ranks beside two busy processes take ms per op).
  auto now = std::chrono::steady_clock::now();
  if (activity_ != activity_seen_) {
    activity_seen_ = activity_;
    last_activity_ = now;
  }
  if (now - last_activity_ < spin_) {
    if (oversubscribed_ && now - last_activity_ >= pure_spin_) sched_yield();
    return {};
  }
  constexpr auto kNap = std::chrono::microseconds(100);
  wait_polls_.clear();
  for (const auto& t : transports_) {
    const hvd_transport_api& api = t->api();
    int fd = api.wait_fd ? api.wait_fd(t->instance()) : -1;
    if (fd < 0) {
      max_sleep = std::min<std::chrono::nanoseconds>(max_sleep, kNap);
      continue;
    }
    if (api.wait_arm && api.wait_arm(t->instance()) == HVD_AGAIN) return {};
    wait_polls_.push_back({fd, POLLIN, 0});
  }
  const size_t first_extra = wait_polls_.size();
  for (int fd : extra_fds) wait_polls_.push_back({fd, POLLIN, 0});
  if (max_sleep <= std::chrono::nanoseconds::zero()) return {};
  timespec ts;
  ts.tv_sec = static_cast<time_t>(max_sleep.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(max_sleep.count() % 1000000000);
  ppoll(wait_polls_.data(), wait_polls_.size(), &ts, nullptr);
  return std::span<const pollfd>(wait_polls_).subspan(first_extra);
}

void Engine::abort(hvd_status reason, int32_t peer) {
  abort_peer_.store(peer, std::memory_order_relaxed);
  aborted_.store(true, std::memory_order_release);
  native_comms_.abort(reason, peer);
  for (const auto& t : transports_) {
    if (t->api().abort) t->api().abort(t->instance(), reason, peer);
  }
}

hvd_p2p_request_s* Engine::take_request() {
  if (!free_) {
    requests_.push_back(std::make_unique<hvd_p2p_request_s>());
    return requests_.back().get();
  }
  hvd_p2p_request_s* req = free_;
  free_ = req->next_free;
  return req;
}

void Engine::give_back(hvd_p2p_request_s* req) {
  if (req->mr && req->link && req->link->cache)
    req->link->cache->release(req->mr);
  *req = hvd_p2p_request_s{};
  req->next_free = free_;
  free_ = req;
}

}  // namespace hvd::p2p
