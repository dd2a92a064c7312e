#include "p2p/mesh.h"

#include <time.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "common/log.h"
#include "config/config.h"
#include "device/cuda_runtime.h"
#include "p2p/core_sharing.h"
#include "p2p/engine.h"
#include "p2p/gpu_scope.h"
#include "p2p/transport.h"

namespace hvd::p2p {
namespace {

constexpr int kScopes = 3;
constexpr int kGpu = 2;
const char* const kScopeNames[kScopes] = {"intra", "inter", "gpu"};

// What one rank publishes: per scope, the transport name and listen handle
// (both empty when the rank has no peer in that scope, or for the gpu scope
// no gpu transport or no listener); why it has no gpu transport; and its
// CPU affinity.
struct Published {
  std::string name[kScopes];
  std::vector<uint8_t> handle[kScopes];
  std::string gpu_why_not;
  int32_t cuda_devices = 0;
  CpuMask cpus;
};

void put_bytes(std::vector<uint8_t>& out, const void* data, size_t n) {
  uint32_t len = static_cast<uint32_t>(n);
  const uint8_t* l = reinterpret_cast<const uint8_t*>(&len);
  out.insert(out.end(), l, l + sizeof len);
  const uint8_t* d = static_cast<const uint8_t*>(data);
  out.insert(out.end(), d, d + n);
}

std::vector<uint8_t> encode(const Published& p) {
  std::vector<uint8_t> out;
  for (int s = 0; s < kScopes; ++s) {
    put_bytes(out, p.name[s].data(), p.name[s].size());
    put_bytes(out, p.handle[s].data(), p.handle[s].size());
  }
  put_bytes(out, p.gpu_why_not.data(), p.gpu_why_not.size());
  put_bytes(out, &p.cuda_devices, sizeof p.cuda_devices);
  put_bytes(out, p.cpus.data(), p.cpus.size());
  return out;
}

Published decode(const std::vector<uint8_t>& in, int rank) {
  Published p;
  size_t at = 0;
  auto take = [&](std::vector<uint8_t>& into) {
    uint32_t len = 0;
    if (at + sizeof len > in.size()) {
      throw Error(HVD_ERR_INTERNAL, "p2p: malformed listen handles of rank " +
                                        std::to_string(rank));
    }
    std::memcpy(&len, in.data() + at, sizeof len);
    at += sizeof len;
    if (at + len > in.size()) {
      throw Error(HVD_ERR_INTERNAL, "p2p: malformed listen handles of rank " +
                                        std::to_string(rank));
    }
    into.assign(in.begin() + at, in.begin() + at + len);
    at += len;
  };
  auto take_text = [&](std::string& into) {
    std::vector<uint8_t> bytes;
    take(bytes);
    into.assign(bytes.begin(), bytes.end());
  };
  for (int s = 0; s < kScopes; ++s) {
    take_text(p.name[s]);
    take(p.handle[s]);
  }
  take_text(p.gpu_why_not);
  std::vector<uint8_t> devices;
  take(devices);
  if (devices.size() == sizeof p.cuda_devices) {
    std::memcpy(&p.cuda_devices, devices.data(), sizeof p.cuda_devices);
  }
  take(p.cpus);
  return p;
}

void nap() {
  timespec ts{0, 200 * 1000};
  nanosleep(&ts, nullptr);
}

std::string rank_list(const std::vector<int32_t>& ranks) {
  std::string out;
  for (int32_t r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// This rank's [transport] gpu transport, listening where it can; null with
// `why_not` set when it has none. Loaded only where CUDA devices exist.
std::unique_ptr<Transport> open_gpu(const PluginLoader& loader,
                                    const Config& config, Bootstrap& bootstrap,
                                    uint64_t epoch, Published& mine,
                                    hvd_listener** listener) {
  if (config.get_strings("transport.gpu").empty()) {
    mine.gpu_why_not = "[transport] gpu names no transport";
    return nullptr;
  }
  const CudaRuntime& cuda = CudaRuntime::get();
  mine.cuda_devices = cuda.device_count();
  if (cuda.device_count() <= 0) {
    const std::string& why = cuda.unavailable_reason();
    mine.gpu_why_not = why.empty()                ? "no CUDA device"
                       : why.rfind("no ", 0) == 0 ? why
                                                  : "no CUDA device: " + why;
    return nullptr;
  }
  std::unique_ptr<Transport> t;
  try {
    t = load_transport("gpu", loader, config, bootstrap, epoch);
  } catch (const Error& e) {
    mine.gpu_why_not = e.what();
    return nullptr;
  }
  std::vector<uint8_t> handle(t->properties().handle_bytes, 0);
  hvd_status st = t->api().listen(t->instance(), handle.data(), listener);
  if (st == HVD_OK) {
    mine.handle[kGpu] = std::move(handle);
  } else if (st != HVD_ERR_UNSUPPORTED) {
    // Unsupported: it moves device memory through its collectives only.
    mine.gpu_why_not = t->error("listen failed");
    *listener = nullptr;
    return nullptr;
  }
  mine.name[kGpu] = t->name();
  return t;
}

}  // namespace

void build_mesh(Engine& engine, const PluginLoader& loader,
                const Config& config, Bootstrap& bootstrap,
                std::chrono::nanoseconds timeout) {
  const int32_t me = engine.world_rank();
  const int32_t size = engine.world_size();
  const std::vector<int>& host_of = bootstrap.layout().host_of;
  if (static_cast<int32_t>(host_of.size()) != size) {
    throw Error(HVD_ERR_INTERNAL, "p2p: the bootstrap's host layout has " +
                                      std::to_string(host_of.size()) +
                                      " ranks, the world " +
                                      std::to_string(size));
  }
  auto scope_of = [&](int32_t peer) {
    return host_of[peer] == host_of[me] ? 0 : 1;
  };

  bool needed[2] = {false, false};
  for (int32_t r = 0; r < size; ++r) {
    if (r != me) needed[scope_of(r)] = true;
  }
  const bool shared = config.get_strings("transport.intra") ==
                      config.get_strings("transport.inter");

  Transport* transport[kScopes] = {nullptr, nullptr, nullptr};
  hvd_listener* listener[kScopes] = {nullptr, nullptr, nullptr};
  std::unique_ptr<Transport> gpu;  // the engine's once every rank has one
  struct Pending {
    hvd_conn* conn;
    Transport* transport;
    int32_t peer;  // -1 for an accepted connection until its handshake ends
  };
  std::vector<Pending> pending;
  // On failure, what is not yet the engine's is closed here (before `gpu`
  // finalizes, as it is declared earlier).
  struct Cleanup {
    std::vector<Pending>& pending;
    Transport** transport;
    hvd_listener** listener;
    ~Cleanup() {
      for (Pending& p : pending) p.transport->api().conn_close(p.conn);
      for (int s = 0; s < kScopes; ++s) {
        if (listener[s]) transport[s]->api().listener_close(listener[s]);
      }
    }
  } cleanup{pending, transport, listener};
  Published mine;
  mine.cpus = own_cpu_mask();
  for (int s = 0; s < 2; ++s) {
    if (!needed[s]) continue;
    int other = 1 - s;
    if (shared && transport[other]) {
      transport[s] = transport[other];
      mine.name[s] = mine.name[other];
      mine.handle[s] = mine.handle[other];
      continue;
    }
    transport[s] = engine.add_transport(load_transport(
        kScopeNames[s], loader, config, bootstrap, engine.epoch()));
    mine.name[s] = transport[s]->name();
    mine.handle[s].assign(transport[s]->properties().handle_bytes, 0);
    hvd_status st = transport[s]->api().listen(
        transport[s]->instance(), mine.handle[s].data(), &listener[s]);
    if (st != HVD_OK) throw Error(st, transport[s]->error("listen failed"));
  }
  gpu = open_gpu(loader, config, bootstrap, engine.epoch(), mine,
                 &listener[kGpu]);
  transport[kGpu] = gpu.get();

  std::vector<std::vector<uint8_t>> blobs = bootstrap.allgather(encode(mine));
  std::vector<Published> peers(size);
  for (int32_t r = 0; r < size; ++r) peers[r] = decode(blobs[r], r);

  std::vector<CpuMask> masks(size);
  std::vector<GpuOffer> offers(size);
  for (int32_t r = 0; r < size; ++r) {
    masks[r] = peers[r].cpus;
    offers[r] = {peers[r].name[kGpu], peers[r].gpu_why_not,
                 !peers[r].handle[kGpu].empty(), peers[r].cuda_devices};
  }
  const bool sharing = shares_cores(masks, host_of, me);
  engine.set_oversubscribed(sharing);
  HVD_LOG(DEBUG) << "p2p: " << core_count(masks[me]) << " core(s) for this rank"
                 << (sharing ? ", with more ranks of this host on them than "
                               "cores: waits yield"
                             : ", with no more ranks of this host on them "
                               "than cores: waits spin");

  // Every rank takes the same decision from the same offers.
  const GpuScope scope = agree_gpu_scope(offers, host_of);
  if (scope.open) {
    transport[kGpu] = engine.add_gpu_transport(std::move(gpu));
    if (!scope.connects && listener[kGpu]) {
      transport[kGpu]->api().listener_close(listener[kGpu]);
      listener[kGpu] = nullptr;
    }
    HVD_LOG(INFO) << "transport.gpu: '" << scope.name << "' on every rank, "
                  << (scope.connects ? "connected to every rank"
                                     : "through its collectives only");
  } else {
    if (listener[kGpu]) transport[kGpu]->api().listener_close(listener[kGpu]);
    listener[kGpu] = nullptr;
    transport[kGpu] = nullptr;
    gpu.reset();
    engine.set_gpu_unavailable(scope.why_not);
    const std::vector<std::string> names = config.get_strings("transport.gpu");
    if (!names.empty()) {
      std::string listed;
      for (const std::string& n : names) {
        listed += (listed.empty() ? "'" : ", '") + n + "'";
      }
      HVD_LOG(INFO) << "transport.gpu: " << listed << " not used ("
                    << scope.why_not << ")";
    }
  }
  const bool gpu_links = scope.open && scope.connects && size > 1;

  hvd_conn_info info{};
  info.struct_size = sizeof(info);
  info.self_rank = me;
  info.epoch = engine.epoch();

  // Accepts awaited per listener (shared intra/inter: one listener).
  size_t awaited[kScopes] = {0, 0, 0};
  auto connect_to = [&](int32_t r, int s) {
    if (r > me) {
      ++awaited[shared && s == 1 && !listener[1] ? 0 : s];
      return;
    }
    info.peer_rank = r;
    hvd_conn* conn = nullptr;
    hvd_status st = transport[s]->api().connect(
        transport[s]->instance(), peers[r].handle[s].data(), &info, &conn);
    if (st != HVD_OK) {
      throw Error(st, transport[s]->error("connect to rank " +
                                          std::to_string(r) + " failed"));
    }
    pending.push_back({conn, transport[s], r});
  };
  for (int32_t r = 0; r < size; ++r) {
    if (r == me) continue;
    int s = scope_of(r);
    if (peers[r].name[s] != mine.name[s]) {
      throw Error(HVD_ERR_CONFIG,
                  "p2p: rank " + std::to_string(r) + " uses transport '" +
                      peers[r].name[s] + "' for transport." + kScopeNames[s] +
                      ", rank " + std::to_string(me) + " uses '" +
                      mine.name[s] + "' (a fallback taken on one rank only?)");
    }
    connect_to(r, s);
    if (gpu_links) connect_to(r, kGpu);
  }

  auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t accepted[kScopes] = {0, 0, 0};
  int32_t remaining = (size - 1) * (gpu_links ? 2 : 1);
  while (remaining > 0) {
    bool moved = false;
    info.peer_rank = -1;
    for (int s = 0; s < kScopes; ++s) {
      if (!listener[s] || accepted[s] == awaited[s]) continue;
      hvd_conn* conn = nullptr;
      hvd_status st = transport[s]->api().accept(listener[s], &info, &conn);
      if (st == HVD_OK && conn) {
        pending.push_back({conn, transport[s], -1});
        ++accepted[s];
        moved = true;
      } else if (st != HVD_AGAIN && st != HVD_OK) {
        throw Error(st, transport[s]->error("accept failed"));
      }
    }
    for (size_t i = 0; i < pending.size();) {
      Pending& p = pending[i];
      hvd_status st = p.transport->api().conn_test(p.conn);
      if (st == HVD_AGAIN) {
        ++i;
        continue;
      }
      if (st != HVD_OK) {
        throw Error(st, p.transport->error(
                            p.peer >= 0 ? "connection to rank " +
                                              std::to_string(p.peer) + " failed"
                                        : "accepted connection failed"));
      }
      int32_t peer = p.transport->api().conn_peer(p.conn);
      const bool over_gpu = p.transport == engine.gpu_transport();
      if (peer < 0 || peer >= size || peer == me ||
          (over_gpu ? engine.gpu_connected(peer) : engine.connected(peer)) ||
          (p.peer >= 0 && peer != p.peer) || (p.peer < 0 && peer < me)) {
        throw Error(HVD_ERR_INTERNAL,
                    p.transport->error("connection from unexpected rank " +
                                       std::to_string(peer)));
      }
      engine.add_link(peer, p.transport, p.conn);
      --remaining;
      moved = true;
      pending[i] = pending.back();
      pending.pop_back();
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::vector<int32_t> missing;
      for (int32_t r = 0; r < size; ++r) {
        if (r != me &&
            (!engine.connected(r) || (gpu_links && !engine.gpu_connected(r)))) {
          missing.push_back(r);
        }
      }
      throw Error(
          HVD_ERR_TIMEOUT,
          "p2p: rank " + std::to_string(me) + " could not connect to rank(s) " +
              rank_list(missing) + " within runtime.start_timeout (" +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(timeout)
                      .count()) +
              " ms)");
    }
    if (!moved) nap();
  }
  std::string routes;
  for (const auto& t : engine.transports()) {
    std::vector<int32_t> served;
    const bool over_gpu = t.get() == engine.gpu_transport();
    for (int32_t r = 0; r < size; ++r) {
      if (over_gpu ? engine.gpu_connected(r)
                   : engine.transport_of(r) == t.get()) {
        served.push_back(r);
      }
    }
    if (served.empty()) continue;
    routes += (routes.empty() ? "" : "; ") + t->name() + " (" + t->scope() +
              ") to rank(s) " + rank_list(served);
  }
  HVD_LOG(DEBUG) << "p2p: connected to " << size - 1 << " peer(s)"
                 << (routes.empty() ? "" : ": " + routes);
}

}  // namespace hvd::p2p
