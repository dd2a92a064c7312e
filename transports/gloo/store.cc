#include "store.h"

#include <cctype>
#include <stdexcept>

#include "horovod_plugin/status_text.h"

namespace hvd_gloo {

namespace {

[[noreturn]] void refuse(const std::string& what, hvd_status status) {
  throw std::runtime_error("gloo: bootstrap store: " + what + ": " +
                           hvd_plugin::status_text(status));
}

}  // namespace

BootstrapStore::BootstrapStore(const hvd_host* host, std::string prefix,
                               std::vector<int32_t> world_ranks,
                               std::chrono::milliseconds timeout)
    : host_(host),
      prefix_(std::move(prefix)),
      world_ranks_(std::move(world_ranks)),
      timeout_(timeout) {}

int32_t BootstrapStore::owner_of(const std::string& key) const {
  size_t digits = key.size();
  while (digits > 0 &&
         std::isdigit(static_cast<unsigned char>(key[digits - 1])))
    --digits;
  if (digits == key.size() || key.size() - digits > 9) {
    throw std::runtime_error("gloo: bootstrap store: key '" + key +
                             "' does not end in the rank that sets it");
  }
  int rank = std::stoi(key.substr(digits));
  if (rank < 0 || rank >= static_cast<int>(world_ranks_.size())) {
    throw std::runtime_error("gloo: bootstrap store: key '" + key +
                             "' names rank " + std::to_string(rank) +
                             " of a team of " +
                             std::to_string(world_ranks_.size()));
  }
  return world_ranks_[rank];
}

void BootstrapStore::set(const std::string& key,
                         const std::vector<char>& data) {
  std::string full = prefix_ + key;
  hvd_status s =
      host_->bootstrap_put(host_->ctx, full.c_str(), data.data(), data.size());
  if (s != HVD_OK) refuse("put '" + full + "'", s);
}

const std::vector<char>& BootstrapStore::fetch(
    const std::string& key, std::chrono::milliseconds timeout) {
  auto it = fetched_.find(key);
  if (it != fetched_.end()) return it->second;
  int32_t owner = owner_of(key);
  std::string full = prefix_ + key;
  std::vector<char> value(4096);
  for (;;) {
    size_t len = value.size();
    hvd_status s = host_->bootstrap_get(host_->ctx, owner, full.c_str(),
                                        value.data(), &len, timeout.count());
    if (s == HVD_ERR_TRUNCATED && len > value.size()) {
      value.resize(len);
      continue;
    }
    if (s != HVD_OK) {
      refuse("'" + full + "' of rank " + std::to_string(owner) + " (waited " +
                 std::to_string(timeout.count()) + " ms)",
             s);
    }
    value.resize(len);
    break;
  }
  return fetched_.emplace(key, std::move(value)).first->second;
}

std::vector<char> BootstrapStore::get(const std::string& key) {
  return fetch(key, timeout_);
}

void BootstrapStore::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout_);
}

void BootstrapStore::wait(const std::vector<std::string>& keys,
                          const std::chrono::milliseconds& timeout) {
  for (const std::string& key : keys) fetch(key, timeout);
}

}  // namespace hvd_gloo
