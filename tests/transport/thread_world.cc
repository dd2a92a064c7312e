#include "thread_world.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace hvd_transport_test {

using hvd_conformance::World;

namespace {

// How a rank that dies leaves its thread; not an std::exception, so the
// suite's handlers let it through.
struct RankDied {};

}  // namespace

Setting setting(const std::string& key, int64_t value) {
  Setting s;
  s.key = key;
  s.is_int = true;
  s.int_value = value;
  return s;
}

Setting setting(const std::string& key, const std::string& value) {
  Setting s;
  s.key = key;
  s.string_value = value;
  return s;
}

struct ThreadJob::Rank : World {
  Store* store = nullptr;
  int rank_ = 0, size_ = 0;
  uint64_t collectives = 0;
  std::string table_name;
  std::vector<Setting> settings;
  std::vector<hvd_config_value> values;
  hvd_config_table table{};
  hvd_world world{};
  hvd_host table_host{};
  std::vector<std::string> errors;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const hvd_host* host() override { return &table_host; }

  void put(const std::string& key, const Bytes& value) override {
    std::lock_guard<std::mutex> lock(store->mu);
    store->values[{rank_, key}] = value;
    store->cv.notify_all();
  }

  Bytes get(int rank, const std::string& key,
            std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(store->mu);
    auto found = [&] { return store->values.count({rank, key}) > 0; };
    if (!store->cv.wait_for(lock, timeout, found)) {
      throw std::runtime_error("no key '" + key + "' from rank " +
                               std::to_string(rank) + " within the timeout");
    }
    return store->values[{rank, key}];
  }

  std::vector<Bytes> exchange(const Bytes& mine) {
    return allgather("collective." + std::to_string(collectives++), mine,
                     std::chrono::minutes(5));
  }

  [[noreturn]] void die(const std::function<void()>& release) override {
    release();
    throw RankDied{};
  }

  // ---- the host table ----

  static Rank* self(void* ctx) { return static_cast<Rank*>(ctx); }

  static int32_t log_enabled(void*, hvd_log_level level) {
    static const int threshold = [] {
      const char* env = std::getenv("HVD_TRANSPORT_TEST_LOG");
      return env != nullptr ? std::atoi(env) : HVD_LOG_WARNING;
    }();
    return level >= threshold;
  }

  static void log(void* ctx, hvd_log_level level, const char* message) {
    if (log_enabled(ctx, level)) {
      std::fprintf(stderr, "[rank %d] %s\n", self(ctx)->rank_, message);
    }
  }

  static hvd_status config_error(void* ctx, const char* key,
                                 const char* message) {
    self(ctx)->errors.push_back(std::string(key) + ": " + message);
    return HVD_ERR_CONFIG;
  }

  static hvd_status bootstrap_put(void* ctx, const char* key, const void* value,
                                  size_t len) {
    auto* p = static_cast<const uint8_t*>(value);
    self(ctx)->put(std::string("plugin.") + key, Bytes(p, p + len));
    return HVD_OK;
  }

  static hvd_status bootstrap_get(void* ctx, int32_t rank, const char* key,
                                  void* value, size_t* len,
                                  int64_t timeout_ms) {
    Bytes got;
    try {
      got = self(ctx)->get(rank, std::string("plugin.") + key,
                           std::chrono::milliseconds(timeout_ms));
    } catch (const std::runtime_error&) {
      return HVD_ERR_TIMEOUT;
    }
    size_t room = *len;
    *len = got.size();
    if (got.size() > room) return HVD_ERR_TRUNCATED;
    std::copy(got.begin(), got.end(), static_cast<uint8_t*>(value));
    return HVD_OK;
  }

  static hvd_status bootstrap_allgather(void* ctx, const void* mine, size_t len,
                                        void* all) {
    auto* p = static_cast<const uint8_t*>(mine);
    std::vector<Bytes> got = self(ctx)->exchange(Bytes(p, p + len));
    auto* out = static_cast<uint8_t*>(all);
    for (const Bytes& b : got) out = std::copy(b.begin(), b.end(), out);
    return HVD_OK;
  }

  static hvd_status bootstrap_barrier(void* ctx) {
    self(ctx)->exchange({});
    return HVD_OK;
  }

  static void* mem_alloc(void*, size_t bytes, size_t alignment) {
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    return std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
  }

  static void mem_free(void*, void* ptr) { std::free(ptr); }

  static void timeline(void*, const char*, const char*) {}

  void build(const std::string& plugin_name) {
    table_name = "transport." + plugin_name;
    values.clear();
    for (const Setting& s : settings) {
      hvd_config_value v{};
      v.struct_size = sizeof(v);
      v.key = s.key.c_str();
      v.type = s.is_int ? HVD_VALUE_INT : HVD_VALUE_STRING;
      v.int_value = s.int_value;
      v.string_value = s.is_int ? nullptr : s.string_value.c_str();
      v.source = "test";
      values.push_back(v);
    }
    table = {sizeof(table), table_name.c_str(), values.data(), values.size()};
    world = {sizeof(world), rank_, size_, rank_, size_, 0, 1, 0, "localhost"};
    hvd_host& h = table_host;
    h = hvd_host{};
    h.struct_size = sizeof(h);
    h.ctx = this;
    h.abi_major = HVD_ABI_VERSION_MAJOR;
    h.abi_minor = HVD_ABI_VERSION_MINOR;
    h.log_enabled = log_enabled;
    h.log = log;
    h.config = &table;
    h.config_error = config_error;
    h.world = &world;
    h.bootstrap_put = bootstrap_put;
    h.bootstrap_get = bootstrap_get;
    h.bootstrap_allgather = bootstrap_allgather;
    h.bootstrap_barrier = bootstrap_barrier;
    h.mem_alloc = mem_alloc;
    h.mem_free = mem_free;
    h.device = nullptr;
    h.timeline_begin = timeline;
    h.timeline_end = timeline;
  }
};

ThreadJob::ThreadJob(int size, std::string plugin_name,
                     std::vector<Setting> settings)
    : size_(size) {
  for (int r = 0; r < size; ++r) {
    auto rank = std::make_unique<Rank>();
    rank->store = &store_;
    rank->rank_ = r;
    rank->size_ = size;
    rank->settings = settings;
    rank->build(plugin_name);
    ranks_.push_back(std::move(rank));
  }
}

ThreadJob::~ThreadJob() = default;

void ThreadJob::run(const std::function<void(World&)>& body) {
  std::vector<std::thread> threads;
  std::mutex mu;
  std::string failure;
  for (auto& rank : ranks_) {
    threads.emplace_back([&, r = rank.get()] {
      try {
        body(*r);
      } catch (const RankDied&) {
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        if (failure.empty()) {
          failure = "rank " + std::to_string(r->rank_) + ": " + e.what();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (!failure.empty()) throw std::runtime_error(failure);
}

const std::vector<std::string>& ThreadJob::config_errors(int rank) const {
  return ranks_[rank]->errors;
}

}  // namespace hvd_transport_test
