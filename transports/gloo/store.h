// Gloo's rendezvous store over the host's bootstrap key-value store, so a
// Gloo context is built from the job's own rendezvous (no file, no Redis).
//
// The host's store is namespaced by the rank that puts a key; Gloo's full
// mesh names each key after the rank that sets it ("3", or "rank_3"), so the
// owner of a key is read from its trailing number, a team rank mapped to the
// world rank through `world_ranks`.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "horovod/host.h"

namespace hvd_gloo {

class BootstrapStore : public gloo::rendezvous::Store {
 public:
  // `prefix` keeps this context's keys apart from every other's.
  BootstrapStore(const hvd_host* host, std::string prefix,
                 std::vector<int32_t> world_ranks,
                 std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // The world rank whose entry holds `key`; throws when the key names no
  // team rank.
  int32_t owner_of(const std::string& key) const;

 private:
  const std::vector<char>& fetch(const std::string& key,
                                 std::chrono::milliseconds timeout);

  const hvd_host* host_;
  std::string prefix_;
  std::vector<int32_t> world_ranks_;
  std::chrono::milliseconds timeout_;
  std::map<std::string, std::vector<char>> fetched_;
};

}  // namespace hvd_gloo
