// The nccl transport of one process: the CUDA device it runs on, its
// communicators (one per team, created through the collectives extension),
// the wait fd and abort. NCCL moves data only through collectives here;
// the point-to-point connection calls answer HVD_ERR_UNSUPPORTED.
#pragma once

#include <mutex>
#include <string>

#include "common/comm_registry.h"
#include "horovod/transport.h"
#include "horovod_plugin/abort_latch.h"
#include "options.h"
#include "waker.h"

namespace hvd_nccl {

class Comm;

class Transport {
 public:
  // Throws a Failure (HVD_ERR_UNSUPPORTED) where no CUDA device exists.
  explicit Transport(const hvd_host* host);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const hvd_host* host() const { return host_; }
  const Options& options() const { return options_; }
  int device() const { return device_; }
  Waker* waker() const { return waker_; }
  void properties(hvd_transport_properties* props) const;
  hvd_status wait_arm() { return waker_->take() ? HVD_AGAIN : HVD_OK; }

  // comm_create: the communicator being built for `team` until it is
  // ready or failed (then comms().forget_pending); live ones are
  // registered there too, so that abort reaches them.
  Comm* pending_comm(const hvd_team& team);
  hvd_transport_common::CommRegistry<Comm>& comms() { return comms_; }

  // Any thread: every communicator is aborted.
  void abort(hvd_status reason, int32_t peer);
  hvd_status aborted(int32_t* peer) const { return abort_.reason(peer); }

 private:
  const hvd_host* host_;
  Options options_;
  int device_ = 0;
  Waker* waker_ = nullptr;
  std::mutex mu_;  // abort
  hvd_transport_common::CommRegistry<Comm> comms_;
  hvd_plugin::AbortLatch abort_;
};

// What horovod-info shows: NCCL's version and the CUDA devices here, or
// why there are none.
const char* describe();

}  // namespace hvd_nccl
