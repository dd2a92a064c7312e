// Capability sets of libfabric providers, recorded from real `fi_info -v`
// output (sources in ofi_fixtures.cc), rebuilt as fi_info structs with
// fi_allocinfo so the ofi transport's endpoint plan can be tested for
// providers this machine does not have.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hvd_ofi_test {

struct Fixture {
  const char* prov_name;
  const char* domain;
  fi_ep_type type;
  uint64_t caps;
  uint64_t mode;
  uint64_t tx_msg_order;
  uint64_t rx_msg_order;
  size_t inject_size;
  size_t tx_size;
  size_t rx_size;
  size_t max_msg_size;
  uint64_t mem_tag_format;
  fi_progress data_progress;
  uint64_t mr_mode;
};

// efa on libfabric 2.0 (p5), as fi_getinfo answers hints without
// FI_MR_LOCAL: no FI_MR_LOCAL, send-after-send ordered.
extern const Fixture kEfa;
// efa on libfabric 2.0 (another build): FI_MR_LOCAL and no ordering.
extern const Fixture kEfaLocalUnordered;
// efa's datagram endpoint from the same dump: not reliable.
extern const Fixture kEfaDgram;
// verbs;ofi_rxm over mlx4/mlx5 (libfabric 1.8/1.9): FI_MR_LOCAL with the
// legacy FI_MR_BASIC bits, manual data progress, 16 KiB inject.
extern const Fixture kVerbsRxm;
// tcp;ofi_rxm and shm from Debian's libfabric 1.17, this machine.
extern const Fixture kTcpRxm;
extern const Fixture kShm;

struct InfoDeleter {
  void operator()(fi_info* info) const { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// The fi_info fi_getinfo would hand the transport: the recorded fields,
// with the mode bits narrowed to those the transport's hints offer (a
// provider answers hints with no mode the application did not offer).
InfoPtr make_info(const Fixture& f);
// The same, with the recorded mode bits as they are.
InfoPtr make_info_unnarrowed(const Fixture& f);

}  // namespace hvd_ofi_test
