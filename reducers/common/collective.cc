#include "collective.h"

#include <string>

#include "horovod_plugin/boundary.h"

using hvd_plugin::fail;

namespace hvd::reducers {

namespace {

[[noreturn]] void invalid(const std::string& what) {
  fail(HVD_ERR_INVALID_ARGUMENT, what);
}

void need(const void* p, const char* name, const char* coll) {
  if (p == nullptr) invalid(std::string(coll) + ": " + name + " is NULL");
}

}  // namespace

Collective read_collective(const hvd_coll_args* args, const hvd_p2p_api* api,
                           hvd_p2p* p2p) {
  if (args == nullptr || api == nullptr || p2p == nullptr) {
    invalid("post: args, p2p table or p2p context is NULL");
  }
  if (args->struct_size < HVD_STRUCT_SIZE(hvd_coll_args, stream)) {
    invalid("post: hvd_coll_args of " + std::to_string(args->struct_size) +
            " bytes, 1.0 has " +
            std::to_string(HVD_STRUCT_SIZE(hvd_coll_args, stream)));
  }
  if (api->struct_size < HVD_STRUCT_SIZE(hvd_p2p_api, test) ||
      api->team == nullptr || api->isend == nullptr || api->irecv == nullptr ||
      api->test == nullptr) {
    invalid("post: the p2p table lacks team/isend/irecv/test");
  }
  Collective c;
  c.kind = args->collective;
  const char* name = collective_name(c.kind);
  c.team = api->team(p2p);
  if (c.team == nullptr || c.team->size < 1 || c.team->rank < 0 ||
      c.team->rank >= c.team->size) {
    invalid(std::string(name) + ": the p2p context has no valid team");
  }
  c.rank = c.team->rank;
  c.size = c.team->size;
  c.device = args->device;
  if (c.device.kind != HVD_MEM_HOST) {
    fail(HVD_ERR_UNSUPPORTED, std::string(name) + " on memory kind " +
                                  std::to_string(c.device.kind) +
                                  ": host memory only");
  }
  c.dtype = args->dtype;
  c.esize = dtype_size(c.dtype);
  if (c.esize == 0 && c.kind != HVD_COLL_BARRIER) {
    invalid(std::string(name) + ": unknown dtype " + std::to_string(c.dtype));
  }
  if (c.esize == 0) c.esize = 1;
  c.send = static_cast<const uint8_t*>(args->send);
  c.recv = static_cast<uint8_t*>(args->recv);
  c.count = args->count;
  c.counts = args->counts;
  c.displs = args->displs;
  c.send_counts = args->send_counts;
  c.send_displs = args->send_displs;
  c.root = args->root;
  c.prescale = args->prescale;
  c.postscale = args->postscale;

  const bool reduces =
      c.kind == HVD_COLL_ALLREDUCE || c.kind == HVD_COLL_REDUCESCATTER;
  if (reduces) {
    switch (args->op) {
      case HVD_OP_SUM:
      case HVD_OP_MIN:
      case HVD_OP_MAX:
      case HVD_OP_PRODUCT:
        c.op = args->op;
        break;
      case HVD_OP_AVERAGE:
        c.op = HVD_OP_SUM;
        c.postscale /= c.size;
        break;
      case HVD_OP_ADASUM:
        fail(HVD_ERR_UNSUPPORTED,
             std::string(name) + ": ADASUM is not offered");
      default:
        invalid(std::string(name) + ": unknown op " + std::to_string(args->op));
    }
  }

  switch (c.kind) {
    case HVD_COLL_ALLREDUCE:
      if (c.count > 0) {
        need(c.send, "send", name);
        need(c.recv, "recv", name);
      }
      break;
    case HVD_COLL_BROADCAST:
      if (c.root < 0 || c.root >= c.size) {
        invalid("broadcast: root " + std::to_string(c.root) +
                " outside a team of " + std::to_string(c.size));
      }
      if (c.count > 0) need(c.recv, "recv", name);
      break;
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_REDUCESCATTER: {
      need(c.counts, "counts", name);
      need(c.displs, "displs", name);
      size_t total = 0;
      for (int32_t k = 0; k < c.size; ++k) total += c.counts[k];
      if (c.kind == HVD_COLL_REDUCESCATTER && total > c.count) {
        invalid("reducescatter: counts add up to " + std::to_string(total) +
                ", more than count " + std::to_string(c.count));
      }
      const size_t mine = c.counts[c.rank];
      const bool gather = c.kind == HVD_COLL_ALLGATHER;
      if ((gather ? total : mine) > 0) need(c.recv, "recv", name);
      if ((gather ? mine : total) > 0) need(c.send, "send", name);
      break;
    }
    case HVD_COLL_ALLTOALL:
      need(c.counts, "counts", name);
      need(c.displs, "displs", name);
      need(c.send_counts, "send_counts", name);
      need(c.send_displs, "send_displs", name);
      if (c.counts[c.rank] != c.send_counts[c.rank]) {
        invalid("alltoall: " + std::to_string(c.send_counts[c.rank]) +
                " elements sent to self but " +
                std::to_string(c.counts[c.rank]) + " expected");
      }
      for (int32_t k = 0; k < c.size; ++k) {
        if (c.send_counts[k] > 0) need(c.send, "send", name);
        if (c.counts[k] > 0) need(c.recv, "recv", name);
      }
      break;
    case HVD_COLL_BARRIER:
      break;
    default:
      fail(HVD_ERR_UNSUPPORTED,
           std::string(name) + " is not a reducer collective");
  }
  return c;
}

}  // namespace hvd::reducers
