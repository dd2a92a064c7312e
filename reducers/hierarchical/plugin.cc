// The hierarchical reducer's ABI table: options, scores, post() and the
// task that posts its phases one after another as nested collectives.
#include <memory>

#include "../common/collective.h"
#include "../common/reducer_table.h"
#include "../common/score_list.h"
#include "hierarchical.h"
#include "horovod/reducer.h"
#include "horovod_plugin/boundary.h"

using hvd_plugin::fail;
using hvd_plugin::guarded;
using hvd_plugin::set_last_error;

struct hvd_reducer_s {
  const hvd_host* host = nullptr;
  hvd::reducers::hierarchical::Options options;
};

namespace hvd::reducers::hierarchical {
namespace {

// Above this a flat ring's n-1 steps over the slow links cost more than the
// two extra phases inside the host.
constexpr uint64_t kFrom = uint64_t(256) << 10;

void read_options(const hvd_host* host, Options& o) {
  const hvd_config_table* table = host->config;
  if (table == nullptr) return;
  for (size_t i = 0; i < table->count; ++i) {
    const hvd_config_value& v = table->values[i];
    const std::string key = v.key ? v.key : "";
    std::string* target = key == "intra"   ? &o.intra
                          : key == "cross" ? &o.cross
                                           : nullptr;
    std::string message;
    if (target == nullptr) {
      message = "unknown key (known: intra, cross)";
    } else if (v.type != HVD_VALUE_STRING || v.string_value == nullptr) {
      message = "expected the name of a reducer, such as \"ring\"";
    } else {
      *target = v.string_value;
      continue;
    }
    const hvd_status s =
        host->config_error(host->ctx, key.c_str(), message.c_str());
    fail(s != HVD_OK ? s : HVD_ERR_CONFIG,
         "reducer.hierarchical." + key + ": " + message);
  }
}

hvd_status init(const hvd_host* host, hvd_reducer** out) {
  return guarded([&] {
    if (host == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "hierarchical: host or out is NULL");
    }
    auto r = std::make_unique<hvd_reducer_s>();
    r->host = host;
    read_options(host, r->options);
    if (r->options.intra == "hierarchical" ||
        r->options.cross == "hierarchical") {
      fail(HVD_ERR_CONFIG,
           "reducer.hierarchical: a phase cannot be run by hierarchical "
           "itself");
    }
    *out = r.release();
    return HVD_OK;
  });
}

hvd_status score(hvd_reducer*, hvd_collective coll, hvd_reduce_op op, hvd_dtype,
                 const hvd_team* team, hvd_mem_kind mem,
                 hvd_score_range* ranges, size_t* count) {
  ScoreList list;
  if (!list.open("hierarchical", ranges, count))
    return HVD_ERR_INVALID_ARGUMENT;
  if (mem != HVD_MEM_HOST || team == nullptr || !kernel_op(coll, op)) {
    return HVD_OK;
  }
  const Layout l = read_layout(*team);
  if (!offered(l, coll) || l.local_size() < 2) return HVD_OK;
  // Below kFrom: offered (runtime.hierarchical_* may ask for it), never
  // preferred.
  list.add(0, kFrom, 1);
  list.add(kFrom, UINT64_MAX, 85);
  return HVD_OK;
}

hvd_status task_free(hvd_task* t) {
  delete t;
  return HVD_OK;
}

hvd_status progress(hvd_task* t, hvd_completion* out) {
  return guarded([&]() -> hvd_status {
    auto failed = [&](hvd_status s, int32_t peer) {
      if (out) {
        out->status = s;
        out->peer = peer;
      }
      return s;
    };
    const hvd_status aborted = t->aborted.load();
    if (aborted != HVD_OK) {
      set_last_error(t->name + ": aborted");
      return failed(aborted, t->abort_peer.load());
    }
    for (;;) {
      if (t->inflight != nullptr) {
        int32_t done = 0;
        hvd_completion c{};
        c.struct_size = sizeof c;
        c.peer = -1;
        hvd_status s =
            t->api->test(t->phases[t->next - 1].on, t->inflight, &done, &c);
        if (s == HVD_OK && !done) return HVD_AGAIN;
        t->inflight = nullptr;
        if (s == HVD_OK) s = c.status;
        if (s != HVD_OK) {
          set_last_error(
              t->name + ": phase " + std::to_string(t->next) + " of " +
              std::to_string(t->phases.size()) + " (" +
              collective_name(t->phases[t->next - 1].args.collective) +
              ") failed");
          return failed(s, c.peer);
        }
      }
      if (t->next == t->phases.size()) return HVD_OK;
      Phase& p = t->phases[t->next];
      hvd_status s =
          t->api->collective(p.on, p.reducer->c_str(), &p.args, &t->inflight);
      if (s != HVD_OK) {
        t->inflight = nullptr;
        fail(s, t->name + ": phase " + std::to_string(t->next + 1) + " (" +
                    collective_name(p.args.collective) +
                    ") could not be posted");
      }
      ++t->next;
    }
  });
}

hvd_status abort_task(hvd_task* t, hvd_status reason, int32_t peer) {
  if (t == nullptr) return HVD_ERR_INVALID_ARGUMENT;
  hvd_status expected = HVD_OK;
  if (t->aborted.compare_exchange_strong(
          expected, reason == HVD_OK ? HVD_ERR_SHUT_DOWN : reason)) {
    t->abort_peer = peer;
  }
  return HVD_OK;
}

// The sub-team of `members` (team ranks), as a context.
hvd_p2p* subteam(const hvd_p2p_api* api, hvd_p2p* p2p,
                 const std::vector<int32_t>& members) {
  hvd_p2p* out = nullptr;
  hvd_status s =
      api->subteam(p2p, members.data(), (int32_t)members.size(), &out);
  if (s != HVD_OK) fail(s, "hierarchical: building a sub-team failed");
  return out;
}

hvd_status post(hvd_reducer* r, const hvd_coll_args* args,
                const hvd_p2p_api* api, hvd_p2p* p2p, hvd_task** out) {
  return guarded([&] {
    if (r == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "hierarchical post: reducer or out NULL");
    }
    if (!HVD_HAS_FIELD(api, hvd_p2p_api, collective) ||
        api->collective == nullptr) {
      fail(HVD_ERR_UNSUPPORTED,
           "hierarchical: this core runs no nested collectives (ABI 1.1)");
    }
    const Collective c = read_collective(args, api, p2p);
    const Layout l = read_layout(*c.team);
    if (!offered(l, c.kind)) {
      fail(HVD_ERR_UNSUPPORTED,
           std::string("hierarchical: no ") + collective_name(c.kind) +
               " for this layout (" + std::to_string(l.host_count()) +
               " host(s), " + (l.uniform ? "equal" : "unequal") +
               " members per host" +
               (c.kind == HVD_COLL_ALLGATHER && !l.consecutive
                    ? ", not in consecutive ranks"
                    : "") +
               ")");
    }
    std::vector<int32_t> peers;
    for (const auto& host : l.hosts) peers.push_back(host[(size_t)l.local]);
    // Every member builds both sub-teams, in this order.
    hvd_p2p* intra = subteam(api, p2p, l.hosts[(size_t)l.host]);
    hvd_p2p* cross = subteam(api, p2p, peers);
    auto task = std::make_unique<hvd_task_s>();
    task->name = std::string("hierarchical ") + collective_name(c.kind);
    task->api = api;
    if (c.kind == HVD_COLL_ALLREDUCE) {
      build_allreduce(*task, c, l, intra, cross, r->options);
    } else {
      build_allgather(*task, c, l, intra, cross, r->options);
    }
    *out = task.release();
    return HVD_OK;
  });
}

}  // namespace

HVD_REDUCER_ENTRY_POINT(reducer_table<hvd_reducer_s, score>(
    "hierarchical", {init, post, progress, task_free, abort_task}))

}  // namespace hvd::reducers::hierarchical
