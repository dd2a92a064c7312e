// An in-process transport for tests of the point-to-point layer: a
// connection is a pair of queues; every call is recorded.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "horovod/transport.h"

struct FakeOptions {
  uint64_t max_message = 0;  // 0: unlimited
  uint32_t tag_bits = 64;
  bool needs_mr = false;
  int again_every = 0;  // every n-th isend answers HVD_AGAIN
  uint32_t mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);  // declared in properties
};

struct FakeMessage {
  uint64_t tag;
  std::vector<uint8_t> data;
};

struct hvd_transport_s {
  FakeOptions options;
  int registrations = 0;
  int deregistrations = 0;
  int isends = 0;
  std::vector<FakeMessage> sent;  // what was sent, in order
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
