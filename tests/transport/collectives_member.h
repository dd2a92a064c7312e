// One rank of a ThreadJob with a transport plugin and its collectives
// communicator over the whole world (one host), for the tests of a
// transport's collectives extension.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <initializer_list>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "horovod/transport.h"
#include "plugin_path.h"
#include "thread_world.h"

namespace hvd_transport_test {

struct CollectivesMember {
  using Clock = std::chrono::steady_clock;

  const hvd_transport_api& api;
  const hvd_transport_collectives& coll;
  hvd_host host;
  hvd_transport* t = nullptr;
  hvd_coll_comm* comm = nullptr;
  std::vector<int32_t> ranks, hosts;
  hvd_team team{};
  // How many tests wait() makes back to back before it sleeps between them.
  int wait_spins = 0;

  // `host_table` is the world's host table, as the core would pass it (a
  // test may add services to it first). comm_create is called again after
  // `create_nap` (0: a yield) until it is done.
  CollectivesMember(const hvd_transport_api& plugin,
                    hvd_conformance::World& world, const hvd_host& host_table,
                    std::chrono::microseconds create_nap = {})
      : api(plugin), coll(collectives_of(plugin)), host(host_table) {
    hvd_status s = api.init(&host, &t);
    if (s != HVD_OK) throw std::runtime_error(api.last_error(nullptr));
    ranks.resize(world.size());
    std::iota(ranks.begin(), ranks.end(), 0);
    hosts.assign(world.size(), 0);
    team.struct_size = sizeof(team);
    team.rank = world.rank();
    team.size = world.size();
    team.world_ranks = ranks.data();
    team.host_of = hosts.data();
    team.host_count = 1;
    team.local_rank = world.rank();
    team.local_size = world.size();
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while ((s = coll.comm_create(t, &team, &comm)) == HVD_AGAIN) {
      if (Clock::now() > deadline) throw std::runtime_error("comm_create");
      if (create_nap.count() == 0) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(create_nap);
      }
    }
    if (s != HVD_OK) throw std::runtime_error(api.last_error(t));
  }
  ~CollectivesMember() {
    if (comm != nullptr) coll.comm_destroy(comm);
    api.finalize(t);
  }
  CollectivesMember(const CollectivesMember&) = delete;
  CollectivesMember& operator=(const CollectivesMember&) = delete;

  // Tests `r` until it completes: `wait_spins` tests back to back, then
  // sleeping on the wait fd between tests, as the core does.
  hvd_completion wait(hvd_request* r) {
    hvd_completion c{};
    c.struct_size = sizeof(c);
    int32_t done = 0;
    auto deadline = Clock::now() + std::chrono::seconds(60);
    for (int polls = 0;; ++polls) {
      EXPECT_EQ(api.test(r, &done, &c), HVD_OK);
      if (done) return c;
      if (Clock::now() > deadline) {
        ADD_FAILURE() << "a collective did not finish in 60 s";
        return c;
      }
      if (polls >= wait_spins && api.wait_arm(t) == HVD_OK) {
        pollfd p{api.wait_fd(t), POLLIN, 0};
        poll(&p, 1, 100);
      }
    }
  }

  // Waits for `r` and expects it to succeed; `what` names it on failure.
  void expect_ok(hvd_request* r, const std::string& what) {
    hvd_completion c = wait(r);
    EXPECT_EQ(c.status, HVD_OK) << what << ": " << api.last_error(t);
  }

  // One question to supports() and the answer expected.
  struct Offer {
    hvd_collective collective;
    hvd_dtype dtype;
    hvd_reduce_op op;
    hvd_mem_kind mem;
    int32_t supported;
  };
  void expect_offers(std::initializer_list<Offer> offers) {
    int row = 0;
    for (const Offer& o : offers) {
      EXPECT_EQ(coll.supports(comm, o.collective, o.dtype, o.op, o.mem),
                o.supported)
          << "offer " << row;
      ++row;
    }
  }

  static const hvd_transport_collectives& collectives_of(
      const hvd_transport_api& plugin) {
    auto* c = find_extension<hvd_transport_collectives>(
        plugin, HVD_EXT_TRANSPORT_COLLECTIVES);
    if (c == nullptr) {
      throw std::runtime_error(std::string(plugin.name) +
                               " offers no collectives extension");
    }
    return *c;
  }
};

}  // namespace hvd_transport_test
