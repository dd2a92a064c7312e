#include "bootstrap/bootstrap.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "bootstrap/layout.h"
#include "bootstrap/pmix_bootstrap.h"
#include "bootstrap/rendezvous_bootstrap.h"
#include "bootstrap/single_bootstrap.h"
#include "common/error.h"
#include "common/log.h"
#include "config/config.h"

namespace hvd {
namespace {

bool env_set(const char* name) {
  const char* value = getenv(name);
  return value && *value;
}

std::string choose_backend(const std::string& configured) {
  if (configured != "auto") return configured;
  if (env_set("HOROVOD_RENDEZVOUS_ADDR")) return "rendezvous";
  if (env_set("PMIX_RANK")) return "pmix";
  return "single";
}

}  // namespace

uint64_t Bootstrap::next_instance(uint64_t epoch) {
  static std::mutex mutex;
  static std::map<uint64_t, uint64_t> count;  // epoch -> instances so far
  std::lock_guard<std::mutex> lock(mutex);
  return count[epoch]++;
}

std::chrono::milliseconds Bootstrap::bounded(
    std::chrono::milliseconds timeout) {
  return std::clamp(timeout, std::chrono::milliseconds(0),
                    std::chrono::milliseconds(UINT32_MAX));
}

std::string Bootstrap::next_collective_key() {
  if (instance_ < 0) instance_ = static_cast<int64_t>(next_instance(epoch()));
  return "hvd.bootstrap." + std::to_string(instance_) + "." +
         std::to_string(collective_seq_++);
}

std::vector<std::vector<uint8_t>> Bootstrap::allgather(
    const std::vector<uint8_t>& mine) {
  std::string key = next_collective_key();
  put(key, mine);
  std::vector<std::vector<uint8_t>> all;
  all.reserve(size());
  for (int r = 0; r < size(); ++r) {
    all.push_back(r == rank() ? mine : get(r, key, collective_timeout_));
  }
  return all;
}

void Bootstrap::barrier() { allgather({}); }

void Bootstrap::compute_layout() {
  std::string host = this_host_identity();
  std::vector<std::vector<uint8_t>> all =
      allgather(std::vector<uint8_t>(host.begin(), host.end()));
  std::vector<std::string> hosts;
  hosts.reserve(all.size());
  for (const auto& h : all) hosts.emplace_back(h.begin(), h.end());
  layout_ = layout_from_hosts(hosts, rank());
}

std::unique_ptr<Bootstrap> Bootstrap::create(const Config& config) {
  std::string configured = config.get_string("bootstrap.backend");
  std::string backend = choose_backend(configured);
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      config.get_duration("runtime.start_timeout"));
  std::unique_ptr<Bootstrap> made;
  if (backend == "rendezvous") {
    made = std::make_unique<RendezvousBootstrap>(timeout);
  } else if (backend == "pmix") {
    made = std::make_unique<PmixBootstrap>(timeout);
  } else if (backend == "single") {
    made = std::make_unique<SingleBootstrap>();
  } else {
    throw Error(HVD_ERR_CONFIG,
                config.source("bootstrap.backend") +
                    ": bootstrap.backend: unknown backend '" + configured +
                    "' (expected auto, rendezvous, pmix or single)");
  }
  HVD_LOG(DEBUG) << "bootstrap: " << made->backend()
                 << " (bootstrap.backend = " << configured << "), rank "
                 << made->rank() << " of " << made->size() << " on "
                 << made->layout().hostname;
  return made;
}

}  // namespace hvd
