// Plugins built against the frozen 1.0 headers, loaded and driven by the
// current core through its current host table. A 1.x core that fails this
// has broken a promise made to every 1.0 plugin.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "config/config.h"
#include "plugin/host_services.h"
#include "plugin/loader.h"

namespace hvd {
namespace {

const std::string kPlugins = HVD_V1_0_PLUGINS;

struct Loaded {
  std::shared_ptr<Plugin> plugin;
  std::unique_ptr<HostServices> host;
};

Loaded load(int kind, const std::string& name, const Config& config) {
  Loaded loaded;
  loaded.plugin = PluginLoader({kPlugins}).load(kind, name);
  HostServicesOptions options;
  options.kind = kind;
  options.name = name;
  options.config = &config;
  loaded.host = std::make_unique<HostServices>(options);
  return loaded;
}

// ---- transport --------------------------------------------------------

hvd_status finish(const hvd_transport_api& api, hvd_request* req,
                  hvd_completion* out) {
  int32_t done = 0;
  out->struct_size = sizeof *out;
  while (!done) {
    hvd_status s = api.test(req, &done, out);
    if (s != HVD_OK) return s;
  }
  return out->status;
}

TEST(AbiV1_0, TransportConnectsAndMovesBytes) {
  Config config;
  Loaded loaded = load(HVD_PLUGIN_TRANSPORT, "loopback", config);
  const hvd_transport_api& api = loaded.plugin->transport();
  EXPECT_EQ(api.abi_major, 1u);
  EXPECT_EQ(api.abi_minor, 0u);
  EXPECT_STREQ(api.version, "1.0-frozen");

  hvd_transport* t = init_transport(*loaded.plugin, loaded.host->table());
  hvd_transport_properties props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  ASSERT_EQ(api.get_properties(t, &props), HVD_OK);
  ASSERT_LE(props.handle_bytes,
            static_cast<uint32_t>(HVD_TRANSPORT_HANDLE_MAX));

  unsigned char handle[HVD_TRANSPORT_HANDLE_MAX];
  hvd_listener* listener = nullptr;
  ASSERT_EQ(api.listen(t, handle, &listener), HVD_OK);
  hvd_conn_info client_info{sizeof(hvd_conn_info), 0, 1, 5};
  hvd_conn_info server_info{sizeof(hvd_conn_info), 1, -1, 5};
  hvd_conn* server = nullptr;
  EXPECT_EQ(api.accept(listener, &server_info, &server), HVD_AGAIN);
  hvd_conn* client = nullptr;
  ASSERT_EQ(api.connect(t, handle, &client_info, &client), HVD_OK);
  EXPECT_EQ(api.conn_test(client), HVD_AGAIN);
  ASSERT_EQ(api.accept(listener, &server_info, &server), HVD_OK);
  EXPECT_EQ(api.conn_test(client), HVD_OK);
  EXPECT_EQ(api.conn_test(server), HVD_OK);
  EXPECT_EQ(api.conn_peer(client), 1);
  EXPECT_EQ(api.conn_peer(server), 0);

  std::vector<char> buffer(64, 'x');
  hvd_mr* mr = nullptr;
  hvd_device host_device{HVD_MEM_HOST, 0};
  ASSERT_EQ(api.mr_reg(t, buffer.data(), buffer.size(), host_device, &mr),
            HVD_OK);

  const char text[] = "sent through a 1.0 plugin";
  hvd_request* send = nullptr;
  hvd_request* recv = nullptr;
  ASSERT_EQ(api.irecv(server, buffer.data(), buffer.size(), 7, mr, &recv),
            HVD_OK);
  ASSERT_EQ(api.isend(client, text, sizeof text, 7, nullptr, &send), HVD_OK);
  hvd_completion done;
  EXPECT_EQ(finish(api, send, &done), HVD_OK);
  EXPECT_EQ(finish(api, recv, &done), HVD_OK);
  EXPECT_EQ(done.bytes, sizeof text);
  EXPECT_STREQ(buffer.data(), text);

  // Too large for the receive: truncated, blaming the sender.
  char small[4];
  ASSERT_EQ(api.isend(server, text, sizeof text, 9, nullptr, &send), HVD_OK);
  ASSERT_EQ(api.irecv(client, small, sizeof small, 9, nullptr, &recv), HVD_OK);
  EXPECT_EQ(finish(api, send, &done), HVD_OK);
  EXPECT_EQ(finish(api, recv, &done), HVD_ERR_TRUNCATED);
  EXPECT_EQ(done.peer, 1);

  // Abort fails what is pending, with the reason and the peer given.
  ASSERT_EQ(api.irecv(server, buffer.data(), buffer.size(), 11, nullptr, &recv),
            HVD_OK);
  EXPECT_EQ(api.abort(t, HVD_ERR_PEER_FAILED, 3), HVD_OK);
  EXPECT_EQ(api.abort(t, HVD_ERR_TIMEOUT, 4), HVD_OK);  // idempotent
  EXPECT_EQ(finish(api, recv, &done), HVD_ERR_PEER_FAILED);
  EXPECT_EQ(done.peer, 3);

  EXPECT_EQ(api.mr_dereg(t, mr), HVD_OK);
  EXPECT_EQ(api.conn_close(client), HVD_OK);
  EXPECT_EQ(api.conn_close(server), HVD_OK);
  EXPECT_EQ(api.listener_close(listener), HVD_OK);
  EXPECT_EQ(api.finalize(t), HVD_OK);
}

TEST(AbiV1_0, TransportRejectsAnotherEpoch) {
  Config config;
  Loaded loaded = load(HVD_PLUGIN_TRANSPORT, "loopback", config);
  const hvd_transport_api& api = loaded.plugin->transport();
  hvd_transport* t = init_transport(*loaded.plugin, loaded.host->table());
  unsigned char handle[HVD_TRANSPORT_HANDLE_MAX];
  hvd_listener* listener = nullptr;
  ASSERT_EQ(api.listen(t, handle, &listener), HVD_OK);
  hvd_conn_info old_epoch{sizeof(hvd_conn_info), 0, 1, 1};
  hvd_conn_info new_epoch{sizeof(hvd_conn_info), 1, -1, 2};
  hvd_conn* client = nullptr;
  hvd_conn* server = nullptr;
  ASSERT_EQ(api.connect(t, handle, &old_epoch, &client), HVD_OK);
  ASSERT_EQ(api.accept(listener, &new_epoch, &server), HVD_OK);
  EXPECT_EQ(api.conn_test(client), HVD_ERR_EPOCH_MISMATCH);
  EXPECT_EQ(api.conn_test(server), HVD_ERR_EPOCH_MISMATCH);
  api.conn_close(client);
  api.conn_close(server);
  api.listener_close(listener);
  api.finalize(t);
}

// ---- reducer ----------------------------------------------------------

}  // namespace
}  // namespace hvd

struct hvd_p2p_request_s {
  bool is_recv;
  int peer;
  void* buf;
  size_t bytes;
  uint32_t step;
};

namespace hvd {
namespace {

// The core's point-to-point layer for N ranks in one thread: messages wait
// in a mailbox keyed by (from, to, step). The mailbox owns the requests, as
// the core does: a task aborted with receives posted frees none of them.
struct Mailbox {
  std::map<std::tuple<int, int, uint32_t>, std::deque<std::vector<uint8_t>>>
      queues;
  std::vector<std::unique_ptr<hvd_p2p_request>> requests;

  hvd_p2p_request* request(const hvd_p2p_request& r) {
    requests.push_back(std::make_unique<hvd_p2p_request>(r));
    return requests.back().get();
  }
};

}  // namespace
}  // namespace hvd

struct hvd_p2p_s {
  hvd::Mailbox* mailbox;
  hvd_team team;
};

namespace hvd {
namespace {

const hvd_team* p2p_team(hvd_p2p* p) { return &p->team; }

hvd_status p2p_isend(hvd_p2p* p, int32_t peer, const void* buf, size_t bytes,
                     uint32_t step, hvd_p2p_request** req) {
  auto* data = static_cast<const uint8_t*>(buf);
  p->mailbox->queues[{p->team.rank, peer, step}].emplace_back(data,
                                                              data + bytes);
  *req = p->mailbox->request({false, peer, nullptr, bytes, step});
  return HVD_OK;
}

hvd_status p2p_irecv(hvd_p2p* p, int32_t peer, void* buf, size_t bytes,
                     uint32_t step, hvd_p2p_request** req) {
  *req = p->mailbox->request({true, peer, buf, bytes, step});
  return HVD_OK;
}

hvd_status p2p_test(hvd_p2p* p, hvd_p2p_request* req, int32_t* done,
                    hvd_completion* out) {
  *done = 0;
  if (req->is_recv) {
    auto& queue = p->mailbox->queues[{req->peer, p->team.rank, req->step}];
    if (queue.empty()) return HVD_OK;
    if (queue.front().size() > req->bytes) return HVD_ERR_TRUNCATED;
    std::memcpy(req->buf, queue.front().data(), queue.front().size());
    queue.pop_front();
  }
  *done = 1;
  out->status = HVD_OK;
  out->peer = -1;
  out->bytes = req->bytes;
  return HVD_OK;
}

// The 1.0 functions; what later minors appended is not offered (NULL).
hvd_p2p_api make_p2p() {
  hvd_p2p_api a{};
  a.struct_size = sizeof(hvd_p2p_api);
  a.team = p2p_team;
  a.isend = p2p_isend;
  a.irecv = p2p_irecv;
  a.test = p2p_test;
  return a;
}
const hvd_p2p_api kP2p = make_p2p();

TEST(AbiV1_0, ReducerScoresAndReduces) {
  Config config;
  Loaded loaded = load(HVD_PLUGIN_REDUCER, "sum", config);
  const hvd_reducer_api& api = loaded.plugin->reducer();
  hvd_reducer* reducer = init_reducer(*loaded.plugin, loaded.host->table());

  constexpr int kRanks = 3;
  constexpr size_t kCount = 5;
  std::vector<int32_t> world_ranks = {0, 1, 2}, host_of = {0, 0, 0};
  Mailbox mailbox;
  std::vector<hvd_p2p> p2p(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    hvd_team team{};
    team.struct_size = sizeof team;
    team.rank = r;
    team.size = kRanks;
    team.world_ranks = world_ranks.data();
    team.host_of = host_of.data();
    team.host_count = 1;
    team.local_rank = r;
    team.local_size = kRanks;
    p2p[r] = hvd_p2p{&mailbox, team};
  }

  hvd_score_range ranges[4];
  size_t count = 4;
  ASSERT_EQ(api.score(reducer, HVD_COLL_ALLREDUCE, &p2p[0].team, HVD_MEM_HOST,
                      ranges, &count),
            HVD_OK);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(ranges[0].min_bytes, 0u);
  EXPECT_EQ(ranges[0].max_bytes, 64u * 1024);
  EXPECT_GT(ranges[0].score, 0);
  count = 4;
  ASSERT_EQ(api.score(reducer, HVD_COLL_ALLGATHER, &p2p[0].team, HVD_MEM_HOST,
                      ranges, &count),
            HVD_OK);
  EXPECT_EQ(count, 0u);

  std::vector<std::vector<float>> send(kRanks), recv(kRanks);
  std::vector<hvd_coll_args> args(kRanks);
  std::vector<hvd_task*> tasks(kRanks, nullptr);
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) send[r].push_back(0.5f * r + i);
    recv[r].assign(kCount, -1.0f);
    hvd_coll_args& a = args[r];
    std::memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.collective = HVD_COLL_ALLREDUCE;
    a.dtype = HVD_FLOAT32;
    a.op = HVD_OP_AVERAGE;
    a.send = send[r].data();
    a.recv = recv[r].data();
    a.count = kCount;
    a.prescale = 1.0;
    a.postscale = 1.0 / kRanks;
    a.device = hvd_device{HVD_MEM_HOST, 0};
    ASSERT_EQ(api.post(reducer, &a, &kP2p, &p2p[r], &tasks[r]), HVD_OK);
  }
  std::vector<bool> finished(kRanks, false);
  for (int round = 0; round < 100; ++round) {
    bool all = true;
    for (int r = 0; r < kRanks; ++r) {
      if (finished[r]) continue;
      hvd_completion c{sizeof(hvd_completion), HVD_OK, -1, 0};
      hvd_status s = api.progress(tasks[r], &c);
      ASSERT_TRUE(s == HVD_OK || s == HVD_AGAIN) << s;
      finished[r] = s == HVD_OK;
      all = all && finished[r];
    }
    if (all) break;
  }
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(finished[r]);
    EXPECT_EQ(api.task_free(tasks[r]), HVD_OK);
    EXPECT_EQ(
        std::memcmp(recv[r].data(), recv[0].data(), kCount * sizeof(float)), 0)
        << "rank " << r << " differs from rank 0";
  }
  for (size_t i = 0; i < kCount; ++i) {
    EXPECT_FLOAT_EQ(recv[0][i], 0.5f + i);  // mean of i, i+0.5, i+1
  }

  // An unsupported combination falls through; abort fails the next progress.
  hvd_coll_args unsupported = args[0];
  unsupported.dtype = HVD_INT8;
  hvd_task* task = nullptr;
  EXPECT_EQ(api.post(reducer, &unsupported, &kP2p, &p2p[0], &task),
            HVD_ERR_UNSUPPORTED);
  Mailbox quiet;
  hvd_p2p lonely{&quiet, p2p[0].team};
  ASSERT_EQ(api.post(reducer, &args[0], &kP2p, &lonely, &task), HVD_OK);
  hvd_completion c{sizeof(hvd_completion), HVD_OK, -1, 0};
  EXPECT_EQ(api.progress(task, &c), HVD_AGAIN);
  EXPECT_EQ(api.abort_task(task, HVD_ERR_PEER_FAILED, 2), HVD_OK);
  EXPECT_EQ(api.progress(task, &c), HVD_ERR_PEER_FAILED);
  EXPECT_EQ(c.peer, 2);
  EXPECT_EQ(api.task_free(task), HVD_OK);
  EXPECT_EQ(api.finalize(reducer), HVD_OK);
}

// ---- adapter ----------------------------------------------------------

// The plugin's own context types (see plugins/record_adapter.c).
struct Arena {
  unsigned char* data;
  size_t capacity, used;
};
struct OpRecord {
  hvd_status status;
  char message[128];
  int done_calls;
};

TEST(AbiV1_0, AdapterAllocatesAndCompletes) {
  auto plugin = PluginLoader({kPlugins}).load(HVD_PLUGIN_ADAPTER, "record");
  const hvd_adapter_api& api = plugin->adapter();
  EXPECT_EQ(check_plugin_table(HVD_PLUGIN_ADAPTER, &api), "");

  std::vector<unsigned char> memory(256);
  Arena arena{memory.data(), memory.size(), 0};
  OpRecord op{HVD_OK, "", 0};
  hvd_tensor like{};
  like.struct_size = sizeof like;
  like.device = hvd_device{HVD_MEM_HOST, 0};
  like.dtype = hvd_dl_dtype{HVD_DL_FLOAT, 32, 1};
  int64_t shape[2] = {4, 3};
  hvd_tensor out{};
  out.struct_size = sizeof out;
  ASSERT_EQ(api.allocate_output(&arena, &op, 0, &like, 2, shape, &out), HVD_OK);
  EXPECT_EQ(out.data, memory.data());
  EXPECT_EQ(out.ndim, 2);
  EXPECT_EQ(arena.used, 48u);
  int64_t huge[1] = {1000};
  EXPECT_EQ(api.allocate_output(&arena, &op, 1, &like, 1, huge, &out),
            HVD_ERR_OUT_OF_MEMORY);

  api.done(&arena, &op, HVD_ERR_MISMATCH, "ranks disagree on the shape");
  EXPECT_EQ(op.done_calls, 1);
  EXPECT_EQ(op.status, HVD_ERR_MISMATCH);
  EXPECT_STREQ(op.message, "ranks disagree on the shape");
}

TEST(AbiV1_0, DiscoveredAsVersion1_0) {
  auto found = PluginLoader({kPlugins}).discover();
  ASSERT_EQ(found.size(), 3u);
  for (const auto& f : found) {
    EXPECT_EQ(f.error, "") << f.path;
    EXPECT_EQ(f.abi_major, 1u) << f.path;
    EXPECT_EQ(f.abi_minor, 0u) << f.path;
    EXPECT_EQ(f.version, "1.0-frozen") << f.path;
  }
}

}  // namespace
}  // namespace hvd
