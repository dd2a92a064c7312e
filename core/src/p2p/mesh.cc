#include "p2p/mesh.h"

#include <sched.h>
#include <time.h>

#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "common/log.h"
#include "config/config.h"
#include "p2p/engine.h"
#include "p2p/transport.h"

namespace hvd::p2p {
namespace {

constexpr int kScopes = 2;
const char* const kScopeNames[kScopes] = {"intra", "inter"};

// What one rank publishes: per scope, the transport name and listen handle
// (both empty when the rank has no peer in that scope).
struct Published {
  std::string name[kScopes];
  std::vector<uint8_t> handle[kScopes];
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
  for (int s = 0; s < kScopes; ++s) {
    std::vector<uint8_t> name;
    take(name);
    p.name[s].assign(name.begin(), name.end());
    take(p.handle[s]);
  }
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
  int32_t local_ranks = 0;
  for (int h : host_of) local_ranks += h == host_of[me];
  cpu_set_t cpus;
  const int cores =
      sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  engine.set_oversubscribed(local_ranks > cores);

  bool needed[kScopes] = {false, false};
  for (int32_t r = 0; r < size; ++r) {
    if (r != me) needed[scope_of(r)] = true;
  }
  const bool shared = config.get_strings("transport.intra") ==
                      config.get_strings("transport.inter");

  Transport* transport[kScopes] = {nullptr, nullptr};
  hvd_listener* listener[kScopes] = {nullptr, nullptr};
  struct Pending {
    hvd_conn* conn;
    Transport* transport;
    int32_t peer;  // -1 for an accepted connection until its handshake ends
  };
  std::vector<Pending> pending;
  // On failure, what is not yet the engine's is closed here.
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
  for (int s = 0; s < kScopes; ++s) {
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

  std::vector<std::vector<uint8_t>> blobs = bootstrap.allgather(encode(mine));
  std::vector<Published> peers(size);
  for (int32_t r = 0; r < size; ++r) peers[r] = decode(blobs[r], r);

  hvd_conn_info info{};
  info.struct_size = sizeof(info);
  info.self_rank = me;
  info.epoch = engine.epoch();

  std::vector<int32_t> awaited_accepts;
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
    if (r > me) {
      awaited_accepts.push_back(r);
      continue;
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
  }

  auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t accepted = 0;
  int32_t remaining = size - 1;
  while (remaining > 0) {
    bool moved = false;
    info.peer_rank = -1;
    for (int s = 0; s < kScopes; ++s) {
      if (!listener[s] || accepted == awaited_accepts.size()) continue;
      hvd_conn* conn = nullptr;
      hvd_status st = transport[s]->api().accept(listener[s], &info, &conn);
      if (st == HVD_OK && conn) {
        pending.push_back({conn, transport[s], -1});
        ++accepted;
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
      if (peer < 0 || peer >= size || peer == me || engine.connected(peer) ||
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
        if (r != me && !engine.connected(r)) missing.push_back(r);
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
    for (int32_t r = 0; r < size; ++r) {
      if (engine.transport_of(r) == t.get()) served.push_back(r);
    }
    if (served.empty()) continue;
    routes += (routes.empty() ? "" : "; ") + t->name() + " (" + t->scope() +
              ") to rank(s) " + rank_list(served);
  }
  HVD_LOG(DEBUG) << "p2p: connected to " << size - 1 << " peer(s)"
                 << (routes.empty() ? "" : ": " + routes);
}

}  // namespace hvd::p2p
