#include "ofi_fixtures.h"

#include <cstring>

#include "ofi/endpoint_plan.h"

namespace hvd_ofi_test {
namespace {

constexpr uint64_t kEfaRdmCaps =
    FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_READ | FI_WRITE | FI_RECV |
    FI_SEND | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | FI_LOCAL_COMM |
    FI_REMOTE_COMM | FI_SOURCE | FI_DIRECTED_RECV;
constexpr uint64_t kEfaOrder = FI_ORDER_SAS | FI_ORDER_ATOMIC_RAR |
                               FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR |
                               FI_ORDER_ATOMIC_WAW;
constexpr uint64_t kRxmOrder = FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS |
                               FI_ORDER_WAW | FI_ORDER_WAS | FI_ORDER_SAW |
                               FI_ORDER_SAS;
constexpr uint64_t kRma = FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW |
                          FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR |
                          FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAW;
constexpr size_t kUnlimited = SIZE_MAX;  // "18446744073709551615"

}  // namespace

// `fi_info --verbose`, libfabric 2.0 built from source, first EFA device of
// a p5 instance (rdmap79s0-rdm): Lequn Chen, "Harnessing 3200 Gbps Network"
// part 0, section on fi_info,
// https://le.qun.ch/en/blog/2024/12/25/libfabric-efa-0-intro/ (the Chinese
// edition carries the same dump).
const Fixture kEfa = {
    .prov_name = "efa",
    .domain = "rdmap79s0-rdm",
    .type = FI_EP_RDM,
    .caps = kEfaRdmCaps,
    .mode = 0,
    .tx_msg_order = kEfaOrder,
    .rx_msg_order = kEfaOrder,
    .inject_size = 4096,
    .tx_size = 4096,
    .rx_size = 8192,
    .max_msg_size = kUnlimited,
    .mem_tag_format = 0xaaaaaaaaaaaaaaaaull,
    .data_progress = FI_PROGRESS_AUTO,
    .mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_HMEM};

// `fi_info --fabric efa --verbose`, libfabric 2.0, rdmap70s0 (first entry:
// RDM; second: DGRAM): the blog post "RDMA Dev Notes" (Ryan H., 2026-01-03,
// section "Get basic information about EFA NIC"). This build reports
// FI_MR_LOCAL and no message ordering when none is asked for.
const Fixture kEfaLocalUnordered = {.prov_name = "efa",
                                    .domain = "rdmap70s0-rdm",
                                    .type = FI_EP_RDM,
                                    .caps = kEfaRdmCaps,
                                    .mode = FI_MSG_PREFIX,
                                    .tx_msg_order = 0,
                                    .rx_msg_order = 0,
                                    .inject_size = 4096,
                                    .tx_size = 4096,
                                    .rx_size = 8192,
                                    .max_msg_size = kUnlimited,
                                    .mem_tag_format = 0xaaaaaaaaaaaaaaaaull,
                                    .data_progress = FI_PROGRESS_AUTO,
                                    .mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
                                               FI_MR_ALLOCATED |
                                               FI_MR_PROV_KEY | FI_MR_HMEM};
const Fixture kEfaDgram = {.prov_name = "efa",
                           .domain = "rdmap70s0-dgrm",
                           .type = FI_EP_DGRAM,
                           .caps = FI_MSG | FI_RECV | FI_SEND | FI_LOCAL_COMM |
                                   FI_REMOTE_COMM | FI_SOURCE,
                           .mode = FI_MSG_PREFIX,
                           .tx_msg_order = 0,
                           .rx_msg_order = 0,
                           .inject_size = 0,
                           .tx_size = 4096,
                           .rx_size = 8192,
                           .max_msg_size = 8928,
                           .mem_tag_format = 0,
                           .data_progress = FI_PROGRESS_AUTO,
                           .mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
                                      FI_MR_ALLOCATED | FI_MR_PROV_KEY};

// verbs;ofi_rxm, from two `fi_info -v` dumps in libfabric's own tracker:
// the domain attributes (mr_mode with the legacy FI_MR_BASIC and
// FI_MR_SCALABLE bits next to the new ones, manual data progress) from
// https://github.com/ofiwg/libfabric/issues/5607 (mlx4_0, API 1.9); the
// endpoint, tx and rx attributes (16320 B inject, 1024-deep queues,
// send-after-send ordered, FI_BUFFERED_RECV offered) from the verbs;ofi_rxm
// entry in https://github.com/ofiwg/libfabric/issues/5149 (mlx5_0). The
// dumps are cut before max_msg_size and mem_tag_format; those are rxm's
// own, as in the full tcp;ofi_rxm dump of
// https://github.com/ofiwg/libfabric/issues/9158 (unlimited, 0x5555...).
const Fixture kVerbsRxm = {
    .prov_name = "verbs;ofi_rxm",
    .domain = "mlx4_0",
    .type = FI_EP_RDM,
    .caps = FI_MSG | FI_RMA | FI_TAGGED | FI_READ | FI_WRITE | FI_RECV |
            FI_SEND | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV |
            FI_LOCAL_COMM | FI_REMOTE_COMM,
    .mode = FI_BUFFERED_RECV,
    .tx_msg_order = kRxmOrder,
    .rx_msg_order = kRxmOrder,
    .inject_size = 16320,
    .tx_size = 1024,
    .rx_size = 1024,
    .max_msg_size = kUnlimited,
    .mem_tag_format = 0x5555555555555555ull,
    .data_progress = FI_PROGRESS_MANUAL,
    .mr_mode = FI_MR_BASIC | FI_MR_SCALABLE | FI_MR_LOCAL | FI_MR_VIRT_ADDR |
               FI_MR_ALLOCATED | FI_MR_PROV_KEY};

// Debian's libfabric 1.17 on this machine, asked for FI_EP_RDM and
// FI_TAGGED (what `fi_info -v -p tcp -t FI_EP_RDM -c FI_TAGGED` prints,
// through fi_tostr), FI_TCP_IFACE=lo.
const Fixture kTcpRxm = {.prov_name = "tcp;ofi_rxm",
                         .domain = "lo",
                         .type = FI_EP_RDM,
                         .caps = FI_TAGGED | FI_RECV | FI_SEND | FI_MULTI_RECV,
                         .mode = 0,
                         .tx_msg_order = kRxmOrder | kRma,
                         .rx_msg_order = kRxmOrder | kRma,
                         .inject_size = 64,
                         .tx_size = 2048,
                         .rx_size = 2048,
                         .max_msg_size = kUnlimited,
                         .mem_tag_format = 0xaaaaaaaaaaaaaaaaull,
                         .data_progress = FI_PROGRESS_MANUAL,
                         .mr_mode = 0};
const Fixture kShm = {.prov_name = "shm",
                      .domain = "shm",
                      .type = FI_EP_RDM,
                      .caps = FI_TAGGED | FI_RECV | FI_SEND | FI_MULTI_RECV |
                              FI_RMA_EVENT | FI_SOURCE,
                      .mode = 0,
                      .tx_msg_order = FI_ORDER_STRICT | kRma |
                                      FI_ORDER_RMA_WAR | FI_ORDER_ATOMIC_WAR,
                      .rx_msg_order = FI_ORDER_STRICT | kRma |
                                      FI_ORDER_RMA_WAR | FI_ORDER_ATOMIC_WAR,
                      .inject_size = 4096,
                      .tx_size = 1024,
                      .rx_size = 1024,
                      .max_msg_size = kUnlimited,
                      .mem_tag_format = 0xaaaaaaaaaaaaaaaaull,
                      .data_progress = FI_PROGRESS_MANUAL,
                      .mr_mode = 0};

InfoPtr make_info_unnarrowed(const Fixture& f) {
  InfoPtr info(fi_allocinfo());
  if (!info) return info;
  info->caps = f.caps;
  info->mode = f.mode;
  info->tx_attr->mode = f.mode;
  info->rx_attr->mode = f.mode;
  info->tx_attr->msg_order = f.tx_msg_order;
  info->rx_attr->msg_order = f.rx_msg_order;
  info->tx_attr->inject_size = f.inject_size;
  info->tx_attr->size = f.tx_size;
  info->rx_attr->size = f.rx_size;
  info->ep_attr->type = f.type;
  info->ep_attr->max_msg_size = f.max_msg_size;
  info->ep_attr->mem_tag_format = f.mem_tag_format;
  info->domain_attr->name = strdup(f.domain);
  info->domain_attr->data_progress = f.data_progress;
  info->domain_attr->mr_mode = static_cast<int>(f.mr_mode);
  info->fabric_attr->prov_name = strdup(f.prov_name);
  return info;
}

InfoPtr make_info(const Fixture& f) {
  InfoPtr info = make_info_unnarrowed(f);
  if (!info) return info;
  info->mode &= hvd_ofi::kHintModes;
  info->tx_attr->mode &= hvd_ofi::kHintModes;
  info->rx_attr->mode &= hvd_ofi::kHintModes;
  return info;
}

}  // namespace hvd_ofi_test
