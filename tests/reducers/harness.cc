#include "harness.h"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "device/device.h"

namespace hvd::test {

struct Transfer {
  bool send = false;
  uint64_t channel = 0;
  int32_t src = 0, dst = 0;  // world ranks
  uint32_t step = 0;
  void* buf = nullptr;
  size_t bytes = 0;
  Fabric* fabric = nullptr;
  bool done = false;
  hvd_completion completion{};
  int late = 0;  // test() calls that still say "not yet" after completion
  bool collected = false;  // test() reported it done: the request is gone
};

// ---- fabric -----------------------------------------------------------------

Fabric::Fabric(int32_t world_size)
    : failed_(world_size, false), wake_(world_size) {}

Fabric::~Fabric() = default;

void Fabric::wake(int32_t rank) {
  ++wake_[rank].generation;
  wake_[rank].cv.notify_all();
}

void Fabric::complete(Transfer* t, hvd_status status, int32_t peer,
                      uint64_t bytes) {
  t->done = true;
  t->completion.struct_size = sizeof t->completion;
  t->completion.status = status;
  t->completion.peer = status == HVD_OK ? -1 : peer;
  t->completion.bytes = bytes;
  wake(t->send ? t->src : t->dst);
}

void Fabric::match(Transfer* send, Transfer* recv) {
  if (send->bytes > recv->bytes) {
    complete(send, HVD_ERR_TRUNCATED, recv->dst, 0);
    complete(recv, HVD_ERR_TRUNCATED, send->src, 0);
    return;
  }
  if (send->bytes > 0) std::memcpy(recv->buf, send->buf, send->bytes);
  complete(send, HVD_OK, -1, send->bytes);
  complete(recv, HVD_OK, -1, send->bytes);
}

hvd_status Fabric::post(Transfer* t) {
  std::lock_guard<std::mutex> lock(mutex_);
  transfers_.emplace_back(t);
  const int32_t peer = t->send ? t->dst : t->src;
  if (failed_[peer]) {
    complete(t, HVD_ERR_PEER_FAILED, peer, 0);
    return HVD_OK;
  }
  const Key key{t->channel, t->src, t->dst, t->step};
  auto& other = (t->send ? recvs_ : sends_)[key];
  if (!other.empty()) {
    Transfer* partner = other.front();
    other.pop_front();
    t->send ? match(t, partner) : match(partner, t);
  } else {
    (t->send ? sends_ : recvs_)[key].push_back(t);
  }
  return HVD_OK;
}

void Fabric::fail_rank(int32_t rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  failed_[rank] = true;
  for (auto* queues : {&sends_, &recvs_}) {
    for (auto& [key, queue] : *queues) {
      for (auto it = queue.begin(); it != queue.end();) {
        Transfer* t = *it;
        const int32_t peer = t->send ? t->dst : t->src;
        const int32_t owner = t->send ? t->src : t->dst;
        if (peer == rank && owner != rank) {
          complete(t, HVD_ERR_PEER_FAILED, rank, 0);
          it = queue.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  for (int32_t r = 0; r < world_size(); ++r) wake(r);
}

uint64_t Fabric::generation(int32_t rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  return wake_[rank].generation;
}

void Fabric::wait(int32_t rank, uint64_t seen) {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_[rank].cv.wait_for(lock, std::chrono::milliseconds(100),
                          [&] { return wake_[rank].generation != seen; });
}

void Fabric::wake_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (int32_t r = 0; r < world_size(); ++r) wake(r);
}

bool Fabric::finished(const Transfer* t) {
  std::lock_guard<std::mutex> lock(mutex_);
  return t->done;
}

// ---- p2p table --------------------------------------------------------------

namespace {

const hvd_team* team_of(hvd_p2p* p) { return &p->team; }

hvd_status post_transfer(hvd_p2p* p, bool send, int32_t peer, void* buf,
                         size_t bytes, uint32_t step, hvd_p2p_request** req) {
  if (req == nullptr || peer < 0 || peer >= p->team.size ||
      peer == p->team.rank || step > 0xffff || (bytes > 0 && buf == nullptr)) {
    return HVD_ERR_INVALID_ARGUMENT;
  }
  if (send && p->chaos && p->rng() % 8 == 0) {
    p->busy = true;
    return HVD_AGAIN;  // back-pressure
  }
  auto* t = new Transfer;
  t->send = send;
  t->channel = p->channel;
  t->src = send ? p->world_rank : p->world_ranks[peer];
  t->dst = send ? p->world_ranks[peer] : p->world_rank;
  t->step = step;
  t->buf = buf;
  t->bytes = bytes;
  t->fabric = p->fabric;
  t->late = p->chaos ? (int)(p->rng() % 3) : 0;
  *req = reinterpret_cast<hvd_p2p_request*>(t);
  return p->fabric->post(t);
}

hvd_status isend(hvd_p2p* p, int32_t peer, const void* buf, size_t bytes,
                 uint32_t step, hvd_p2p_request** req) {
  return post_transfer(p, true, peer, const_cast<void*>(buf), bytes, step, req);
}

hvd_status irecv(hvd_p2p* p, int32_t peer, void* buf, size_t bytes,
                 uint32_t step, hvd_p2p_request** req) {
  return post_transfer(p, false, peer, buf, bytes, step, req);
}

hvd_status test(hvd_p2p* p, hvd_p2p_request* req, int32_t* done,
                hvd_completion* out) {
  Transfer* t = reinterpret_cast<Transfer*>(req);
  if (t == nullptr || done == nullptr || t->collected) {
    return HVD_ERR_INVALID_ARGUMENT;
  }
  *done = 0;
  if (!t->fabric->finished(t)) return HVD_OK;
  if (t->late > 0) {
    --t->late;
    p->busy = true;
    return HVD_OK;
  }
  *done = 1;
  if (out != nullptr) {
    out->status = t->completion.status;
    out->peer = t->completion.peer;
    out->bytes = t->completion.bytes;
  }
  t->collected = true;
  return HVD_OK;
}

hvd_status subteam(hvd_p2p* p, const int32_t* members, int32_t count,
                   hvd_p2p** out) {
  if (members == nullptr || count < 1 || out == nullptr) {
    return HVD_ERR_INVALID_ARGUMENT;
  }
  std::vector<int32_t> world;
  bool mine = false;
  for (int32_t i = 0; i < count; ++i) {
    if (members[i] < 0 || members[i] >= p->team.size) {
      return HVD_ERR_INVALID_ARGUMENT;
    }
    world.push_back(p->world_ranks[members[i]]);
    mine = mine || members[i] == p->team.rank;
  }
  if (!mine) return HVD_ERR_INVALID_ARGUMENT;
  // Members build their sub-teams in the same order, so the n-th sub-team
  // of a team has the same channel everywhere.
  const uint64_t channel = p->channel * 64 + p->subteams.size() + 1;
  Chaos chaos{p->chaos, p->rng()};
  p->subteams.push_back(std::make_unique<hvd_p2p_s>(
      p->fabric, channel, std::move(world), p->world_rank, chaos));
  *out = p->subteams.back().get();
  return HVD_OK;
}

const hvd_transport_collectives* native(hvd_p2p*, hvd_coll_comm** comm) {
  if (comm != nullptr) *comm = nullptr;
  return nullptr;
}

// Never reached: native() hands out no collectives.
hvd_status native_test(hvd_p2p*, hvd_request*, int32_t*, hvd_completion*) {
  return HVD_ERR_INTERNAL;
}

// peer_buffer and the later optional fields: not offered (NULL).
hvd_p2p_api make_p2p_api() {
  hvd_p2p_api api;
  std::memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.team = team_of;
  api.isend = isend;
  api.irecv = irecv;
  api.test = test;
  api.subteam = subteam;
  api.native = native;
  api.native_test = native_test;
  return api;
}

}  // namespace

const hvd_p2p_api* p2p_api() {
  static const hvd_p2p_api api = make_p2p_api();
  return &api;
}

}  // namespace hvd::test

hvd_p2p_s::hvd_p2p_s(hvd::test::Fabric* f, uint64_t ch,
                     std::vector<int32_t> members, int32_t me,
                     hvd::test::Chaos c)
    : fabric(f),
      channel(ch),
      world_rank(me),
      world_ranks(std::move(members)),
      rng(c.seed),
      chaos(c.on) {
  team.struct_size = sizeof team;
  team.size = (int32_t)world_ranks.size();
  team.rank = -1;
  for (int32_t i = 0; i < team.size; ++i) {
    if (world_ranks[i] == me) team.rank = i;
  }
  host_of.assign(world_ranks.size(), 0);
  team.world_ranks = world_ranks.data();
  team.host_of = host_of.data();
  team.host_count = 1;
  team.local_rank = team.rank;
  team.local_size = team.size;
}

namespace hvd::test {

// ---- host -------------------------------------------------------------------

TestHost::TestHost(const std::string& table_name,
                   std::map<std::string, std::string> config)
    : name_(table_name) {
  keys_.reserve(config.size());
  strings_.reserve(config.size());
  for (const auto& [key, value] : config) {
    keys_.push_back(key);
    strings_.push_back(value);
  }
  for (size_t i = 0; i < keys_.size(); ++i) {
    hvd_config_value v{};
    v.struct_size = sizeof v;
    v.key = keys_[i].c_str();
    v.source = "test";
    if (strings_[i].rfind("int:", 0) == 0) {
      v.type = HVD_VALUE_INT;
      v.int_value = std::strtoll(strings_[i].c_str() + 4, nullptr, 10);
    } else {
      v.type = HVD_VALUE_STRING;
      v.string_value = strings_[i].c_str();
    }
    values_.push_back(v);
  }
  table_.struct_size = sizeof table_;
  table_.name = name_.c_str();
  table_.values = values_.data();
  table_.count = values_.size();
  world_.struct_size = sizeof world_;
  world_.size = 1;
  world_.local_size = 1;
  world_.cross_size = 1;
  world_.hostname = "localhost";
  host_.struct_size = sizeof host_;
  host_.ctx = this;
  host_.abi_major = HVD_ABI_VERSION_MAJOR;
  host_.abi_minor = HVD_ABI_VERSION_MINOR;
  host_.log_enabled = log_enabled;
  host_.log = log;
  host_.config = &table_;
  host_.config_error = config_error;
  host_.world = &world_;
  host_.mem_alloc = mem_alloc;
  host_.mem_free = mem_free;
  host_.device = hvd::device_api();
}

int32_t TestHost::log_enabled(void*, hvd_log_level level) {
  return level >= HVD_LOG_WARNING;
}

void TestHost::log(void* ctx, hvd_log_level level, const char* message) {
  if (level >= HVD_LOG_WARNING) {
    std::fprintf(stderr, "[%s] %s\n",
                 static_cast<TestHost*>(ctx)->name_.c_str(), message);
  }
}

hvd_status TestHost::config_error(void* ctx, const char* key,
                                  const char* message) {
  auto* self = static_cast<TestHost*>(ctx);
  std::lock_guard<std::mutex> lock(self->mutex_);
  self->errors_.push_back(std::string(key) + ": " + message);
  return HVD_ERR_CONFIG;
}

void* TestHost::mem_alloc(void* ctx, size_t bytes, size_t alignment) {
  auto* self = static_cast<TestHost*>(ctx);
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    ++self->allocations_;
  }
  void* p = nullptr;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  return posix_memalign(&p, alignment, bytes > 0 ? bytes : 1) == 0 ? p
                                                                   : nullptr;
}

void TestHost::mem_free(void*, void* p) { std::free(p); }

// ---- plugins ----------------------------------------------------------------

ReducerPlugin::ReducerPlugin(const std::string& name)
    : path_(std::string(HVD_PLUGIN_DIR) + "/libhorovod-reducer-" + name +
            ".so") {
  library_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    throw std::runtime_error("cannot load " + path_ + ": " + dlerror());
  }
  auto entry = reinterpret_cast<hvd_reducer_get_api_fn>(
      dlsym(library_, HVD_REDUCER_ENTRY));
  if (entry == nullptr) throw std::runtime_error(path_ + ": no entry symbol");
  api_ = entry(HVD_ABI_VERSION_MAJOR, HVD_ABI_VERSION_MINOR);
  if (api_ == nullptr) throw std::runtime_error(path_ + ": no table");
}

ReducerPlugin::~ReducerPlugin() {
  if (library_ != nullptr) dlclose(library_);
}

RankReducers::RankReducers(const ReducerPlugin& plugin, int32_t ranks,
                           std::map<std::string, std::string> config)
    : plugin_(plugin) {
  for (int32_t r = 0; r < ranks; ++r) {
    hosts_.push_back(std::make_unique<TestHost>(
        std::string("reducer.") + plugin.api().name, config));
    hvd_reducer* reducer = nullptr;
    const hvd_status st = plugin.api().init(hosts_.back()->table(), &reducer);
    if (st != HVD_OK) {
      throw std::runtime_error(std::string("init failed: ") +
                               plugin.api().last_error(nullptr));
    }
    reducers_.push_back(reducer);
  }
}

RankReducers::~RankReducers() {
  for (hvd_reducer* r : reducers_) plugin_.api().finalize(r);
}

// ---- running
// ------------------------------------------------------------------

std::vector<int32_t> all_ranks(int32_t n) {
  std::vector<int32_t> v(n);
  for (int32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

std::vector<RankOutcome> run_collective(
    const RankReducers& reducers, const std::vector<int32_t>& members,
    int32_t world_size, const std::function<hvd_coll_args(int32_t)>& args,
    const RunOptions& options) {
  const int32_t n = (int32_t)members.size();
  Fabric fabric(world_size);
  std::vector<std::unique_ptr<hvd_p2p_s>> contexts;
  for (int32_t r = 0; r < n; ++r) {
    Chaos chaos = options.chaos;
    chaos.seed = options.chaos.seed * 1000003 + (uint64_t)r;
    contexts.push_back(
        std::make_unique<hvd_p2p_s>(&fabric, 1, members, members[r], chaos));
  }
  std::vector<RankOutcome> outcomes(n);
  std::vector<hvd_task*> tasks(n, nullptr);
  std::mutex mutex;
  std::condition_variable changed;
  int32_t posted = 0, finished = 0;
  bool may_free = false;
  const hvd_reducer_api& api = reducers.api();

  auto rank_main = [&](int32_t r) {
    hvd_p2p_s* p2p = contexts[r].get();
    RankOutcome& out = outcomes[r];
    hvd_task* task = nullptr;
    bool alive = !options.before_post || options.before_post(r);
    if (!alive) {
      out.posted = HVD_ERR_ABORTED;  // this rank "died" before posting
      out.status = HVD_ERR_ABORTED;
    } else {
      const hvd_coll_args a = args(r);
      out.posted = api.post(reducers[r], &a, p2p_api(), p2p, &task);
      if (out.posted != HVD_OK) {
        out.message = api.last_error(reducers[r]);
        out.status = out.posted;
        task = nullptr;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      tasks[r] = task;
      ++posted;
    }
    changed.notify_all();
    if (task != nullptr) {
      out.completion.struct_size = sizeof out.completion;
      out.completion.peer = -1;
      for (;;) {
        const uint64_t seen = fabric.generation(p2p->world_rank);
        p2p->busy = false;
        out.status = api.progress(task, &out.completion);
        if (out.status != HVD_AGAIN) break;
        if (p2p->busy) {
          std::this_thread::yield();
          continue;
        }
        fabric.wait(p2p->world_rank, seen);
      }
      if (out.status != HVD_OK) out.message = api.last_error(reducers[r]);
      if (out.status == HVD_OK && options.after_done) options.after_done(r);
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++finished;
    }
    changed.notify_all();
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return may_free; });
    lock.unlock();
    if (task != nullptr) api.task_free(task);
  };

  std::vector<std::thread> threads;
  for (int32_t r = 0; r < n; ++r) threads.emplace_back(rank_main, r);
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return posted == n; });
  }
  if (options.meanwhile) {
    options.meanwhile(tasks, fabric);
    fabric.wake_all();
  }
  {
    // A reducer that never finishes would hang the suite: say so and stop.
    std::unique_lock<std::mutex> lock(mutex);
    const char* limit = std::getenv("HVD_TEST_HANG_SECONDS");
    const int seconds = limit != nullptr ? std::atoi(limit) : 120;
    if (!changed.wait_for(lock, std::chrono::seconds(seconds),
                          [&] { return finished == n; })) {
      std::fprintf(stderr,
                   "reducer harness: %d of %d ranks still running "
                   "after %d s\n",
                   n - finished, n, seconds);
      std::abort();
    }
    may_free = true;
  }
  changed.notify_all();
  for (auto& t : threads) t.join();
  return outcomes;
}

}  // namespace hvd::test
