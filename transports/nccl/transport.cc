#include "transport.h"

#include <nccl.h>

#include "comm.h"
#include "cuda.h"
#include "horovod_plugin/boundary.h"
#include "unique_id.h"

namespace hvd_nccl {

using hvd_plugin::fail;

namespace {

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "NCCL (version unknown)";
  // NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9.
  return "NCCL " + std::to_string(code / 10000) + "." +
         std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

}  // namespace

const char* describe() {
  static const std::string text = [] {
    std::string why;
    int n = cuda_device_count(&why);
    std::string out = nccl_version() + "; ";
    if (n == 0) return out + "no CUDA device (" + why + ")";
    out += std::to_string(n) + " CUDA device" + (n == 1 ? "" : "s") + ":";
    for (int d = 0; d < n; ++d) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
        out += std::string(d == 0 ? " " : ", ") + prop.name;
      }
    }
    return out;
  }();
  return text.c_str();
}

Transport::Transport(const hvd_host* host)
    : host_(host), options_(read_options(host)) {
  std::string why;
  int count = cuda_device_count(&why);
  if (count == 0) {
    fail(HVD_ERR_UNSUPPORTED,
         "nccl: no CUDA device here (" + why + "); " + nccl_version() +
             " moves CUDA memory only, so there is nothing for it to do");
  }
  int local = host->world != nullptr ? host->world->local_rank : 0;
  device_ = options_.device >= 0 ? options_.device : local % count;
  if (device_ >= count) {
    fail(HVD_ERR_CONFIG, "nccl: [transport.nccl] device " +
                             std::to_string(device_) + ", but this host has " +
                             std::to_string(count) + " CUDA device(s)");
  }
  waker_ = new Waker();
}

Transport::~Transport() {
  comms_.destroy_pending();
  waker_->unref();
}

void Transport::properties(hvd_transport_properties* props) const {
  *props = hvd_transport_properties{};
  props->struct_size = HVD_STRUCT_SIZE(hvd_transport_properties, handle_bytes);
  props->mem_kinds = HVD_MEM_BIT(HVD_MEM_CUDA);
  // NCCL runs proxy threads of its own.
  props->flags = HVD_TRANSPORT_NATIVE_COLLECTIVES | HVD_TRANSPORT_OWN_THREADS;
  props->tag_bits = 0;  // no point-to-point messages
  props->max_requests = 1024;
  props->max_message_bytes = uint64_t{1} << 40;
  props->bandwidth_gbps = 100.0;
  props->latency_us = 10.0;
  props->handle_bytes = 8;
}

Comm* Transport::pending_comm(const hvd_team& team) {
  return comms_.pending(team, "nccl", [&](uint32_t n) {
    if (hvd_status a = aborted(nullptr); a != HVD_OK) {
      fail(a, "nccl: comm_create after abort");
    }
    return new Comm(*this, team,
                    UniqueIdExchange::key_for(team.process_set, team.epoch, n));
  });
}

void Transport::abort(hvd_status reason, int32_t peer) {
  std::lock_guard<std::mutex> lock(mu_);
  abort_.trip(reason, peer);
  reason = abort_.reason(&peer);
  comms_.for_each_live([&](Comm* c) { c->abort(reason, peer); });
  waker_->notify();
}

}  // namespace hvd_nccl
