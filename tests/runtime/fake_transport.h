// An in-process transport for tests of the point-to-point layer: a
// connection is a pair of queues; every call is recorded. With a
// collectives extension, a communicator remembers its members.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_set>
#include <vector>

#include "horovod/transport.h"

// What a fake transport's collectives were asked; the test owns it.
struct FakeCollectivesLog {
  int creates = 0, destroys = 0;  // communicators
};

struct FakeOptions {
  uint64_t max_message = 0;  // 0: unlimited
  uint32_t tag_bits = 64;
  bool needs_mr = false;
  int again_every = 0;  // every n-th isend answers HVD_AGAIN
  // Declared in properties; also the memory its collectives support.
  uint32_t mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);
  FakeCollectivesLog* collectives_log = nullptr;  // none: nothing is counted
  bool create_again_first = false;  // the first comm_create answers HVD_AGAIN
  bool create_never_done = false;   // every comm_create answers HVD_AGAIN
};

struct FakeMessage {
  uint64_t tag;
  std::vector<uint8_t> data;
};

struct hvd_transport_s {
  FakeOptions options;
  // What the transport owns and frees at finalize at the latest, as a real
  // one does: its requests until test() reports them done (an aborted job
  // leaves some), and its ends of connections until conn_close.
  std::unordered_set<hvd_request*> requests;
  std::unordered_set<hvd_conn_s*> conns;
  int registrations = 0;
  int deregistrations = 0;
  int isends = 0;
  std::vector<FakeMessage> sent;  // what was sent, in order
  int comm_create_calls = 0;
  hvd_status refuse = HVD_OK;  // not HVD_OK: every isend and irecv is refused
};

struct hvd_conn_s {
  hvd_transport_s* transport = nullptr;
  hvd_conn_s* peer = nullptr;
  int32_t peer_rank = -1;
  std::deque<FakeMessage> inbox;
};

const hvd_transport_api* fake_transport_api();
hvd_transport_s* fake_transport(FakeOptions options);
// Two connected ends: `a` at rank_a talks to `b` at rank_b.
void fake_connect(hvd_transport_s* a, int32_t rank_a, hvd_transport_s* b,
                  int32_t rank_b, hvd_conn_s** conn_a, hvd_conn_s** conn_b);

// A communicator of the fake collectives extension.
struct FakeComm {
  hvd_transport_s* transport = nullptr;
  std::vector<int32_t> members;  // world ranks, in team order
  uint32_t mem_kinds = 0;        // the transport's
  FakeCollectivesLog* log = nullptr;
  hvd_status aborted = HVD_OK;  // the reason comm_abort gave
};
FakeComm* fake_comm(hvd_coll_comm* c);

// The collectives extension: allreduce completes at once (through the
// transport's test()) without touching the buffers; supports() accepts any
// collective on the transport's memory kinds.
const hvd_transport_collectives* fake_collectives();
// The fake transport's table with fake_collectives() in its chain.
const hvd_transport_api* fake_collectives_transport_api();
