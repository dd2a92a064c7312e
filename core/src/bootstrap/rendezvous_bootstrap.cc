#include "bootstrap/rendezvous_bootstrap.h"

#include <algorithm>
#include <cstdlib>

#include "bootstrap/layout.h"
#include "common/error.h"

namespace hvd {
namespace {

using rendezvous::Reader;
using rendezvous::Response;
using rendezvous::Writer;
using Clock = std::chrono::steady_clock;

// A response to a long poll is due at the poll's timeout; allow for a slow
// service on top of that before calling it dead.
constexpr auto kResponseSlack = std::chrono::seconds(10);

std::string required_env(const char* name) {
  const char* value = getenv(name);
  if (!value || !*value) {
    throw Error(HVD_ERR_CONFIG,
                std::string("bootstrap (rendezvous): ") + name +
                    " is not set (start the job with horovodrun, or choose "
                    "another bootstrap.backend)");
  }
  return value;
}

// `timeout` is bounded() already.
uint32_t timeout_field(std::chrono::milliseconds timeout) {
  return static_cast<uint32_t>(timeout.count());
}

}  // namespace

RendezvousBootstrap::RendezvousBootstrap(
    std::chrono::milliseconds start_timeout) {
  start_timeout = bounded(start_timeout);
  collective_timeout_ = start_timeout;
  address_ = required_env("HOROVOD_RENDEZVOUS_ADDR");
  required_env("HOROVOD_RENDEZVOUS_PORT");
  port_ = env_int("HOROVOD_RENDEZVOUS_PORT");
  secret_ = rendezvous::decode_hex(required_env("HOROVOD_SECRET_KEY"),
                                   "HOROVOD_SECRET_KEY");
  job_id_ = required_env("HOROVOD_JOB_ID");
  required_env("HOROVOD_RANK");
  required_env("HOROVOD_SIZE");
  rank_ = env_int("HOROVOD_RANK");
  size_ = env_int("HOROVOD_SIZE");
  epoch_ = static_cast<uint64_t>(std::max(0, env_int("HOROVOD_WORLD_EPOCH")));
  if (port_ <= 0 || port_ > 65535) {
    throw Error(HVD_ERR_CONFIG, "HOROVOD_RENDEZVOUS_PORT=" +
                                    std::to_string(port_) + " is not a port");
  }
  if (size_ < 1 || rank_ >= size_) {
    throw Error(HVD_ERR_CONFIG,
                "HOROVOD_RANK=" + std::to_string(rank_) +
                    " is not below HOROVOD_SIZE=" + std::to_string(size_));
  }
  service_ = "rendezvous service at " + address_ + ":" + std::to_string(port_);

  idle_.push_back(open(start_timeout));
  compute_layout();
  check_launcher_layout();
}

std::unique_ptr<rendezvous::Connection> RendezvousBootstrap::open(
    std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  auto connection = std::make_unique<rendezvous::Connection>(address_, port_,
                                                             secret_, deadline);
  Writer join;
  join.u32(rank_).u32(size_).str(job_id_).str(this_host_identity()).u64(
      epoch_);
  Response joined = connection->call(rendezvous::kJoin, join.bytes(), deadline);
  if (joined.status != rendezvous::kOk) fail(joined, "joining", timeout);
  return connection;
}

Response RendezvousBootstrap::call(rendezvous::Op op, const Writer& fields,
                                   std::chrono::milliseconds wait) {
  std::unique_ptr<rendezvous::Connection> connection;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!connection) connection = open(collective_timeout_);
  // On a failure the connection is dropped: its state is unknown.
  Response response = connection->call(op, fields.bytes(),
                                       Clock::now() + wait + kResponseSlack);
  if (response.status != rendezvous::kError) {  // the service closes on ERROR
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(connection));
  }
  return response;
}

void RendezvousBootstrap::fail(const Response& response,
                               const std::string& what,
                               std::chrono::milliseconds timeout) {
  Reader reader(response.fields.data(), response.fields.size());
  std::string prefix =
      "bootstrap (rendezvous): rank " + std::to_string(rank_) + " ";
  if (response.status == rendezvous::kTimeout) {
    auto missing = rendezvous::decode_missing(
        response.fields, static_cast<uint32_t>(size_), service_);
    std::string ranks;
    for (int r : missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    throw Error(HVD_ERR_TIMEOUT,
                prefix + "timed out after " + std::to_string(timeout.count()) +
                    " ms " + what + " (still missing: rank" +
                    (missing.size() == 1 ? " " : "s ") + ranks + ")",
                missing.empty() ? -1 : missing.front());
  }
  std::string message =
      response.status == rendezvous::kError
          ? reader.str()
          : "unknown status " + std::to_string(response.status);
  throw Error(HVD_ERR_PEER_FAILED,
              prefix + what + ": " + service_ + " refused: " + message);
}

void RendezvousBootstrap::check_key(const std::string& key) const {
  if (key.empty() || key.size() > rendezvous::kMaxKeyBytes) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "bootstrap (rendezvous): key of " + std::to_string(key.size()) +
                    " bytes (must be 1 to " +
                    std::to_string(rendezvous::kMaxKeyBytes) + ")");
  }
}

void RendezvousBootstrap::put(const std::string& key,
                              const std::vector<uint8_t>& value) {
  check_key(key);
  if (value.size() > rendezvous::kMaxValueBytes) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "bootstrap (rendezvous): value of key '" + key + "' has " +
                    std::to_string(value.size()) + " bytes (at most " +
                    std::to_string(rendezvous::kMaxValueBytes) + ")");
  }
  Writer fields;
  fields.str(key).blob(value);
  Response response = call(rendezvous::kPut, fields, {});
  if (response.status != rendezvous::kOk) {
    fail(response, "putting key '" + key + "'", {});
  }
}

std::vector<uint8_t> RendezvousBootstrap::get(
    int rank, const std::string& key, std::chrono::milliseconds timeout) {
  check_key(key);
  if (rank < 0 || rank >= size_) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "bootstrap (rendezvous): get of key '" + key + "' from rank " +
                    std::to_string(rank) + " (size " + std::to_string(size_) +
                    ")");
  }
  timeout = bounded(timeout);
  Writer fields;
  fields.u32(rank).str(key).u32(timeout_field(timeout));
  Response response = call(rendezvous::kGet, fields, timeout);
  if (response.status != rendezvous::kOk) {
    fail(response,
         "waiting for key '" + key + "' of rank " + std::to_string(rank),
         timeout);
  }
  Reader reader(response.fields.data(), response.fields.size());
  return reader.blob();
}

std::vector<std::vector<uint8_t>> RendezvousBootstrap::allgather(
    const std::vector<uint8_t>& mine) {
  if (mine.size() > rendezvous::kMaxValueBytes) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "bootstrap (rendezvous): allgather of " +
                    std::to_string(mine.size()) + " bytes (at most " +
                    std::to_string(rendezvous::kMaxValueBytes) + ")");
  }
  std::string key = next_collective_key();
  Writer fields;
  fields.str(key).blob(mine).u32(timeout_field(collective_timeout_));
  Response response = call(rendezvous::kAllgather, fields, collective_timeout_);
  if (response.status != rendezvous::kOk) {
    fail(response, "in collective '" + key + "'", collective_timeout_);
  }
  return rendezvous::decode_allgather(
      response.fields, static_cast<uint32_t>(size_),
      service_ + " (collective '" + key + "')");
}

void RendezvousBootstrap::barrier() { allgather({}); }

void RendezvousBootstrap::check_launcher_layout() const {
  struct Expected {
    const char* variable;
    int value;
  } expected[] = {
      {"HOROVOD_LOCAL_RANK", layout_.local_rank},
      {"HOROVOD_LOCAL_SIZE", layout_.local_size},
      {"HOROVOD_CROSS_RANK", layout_.cross_rank},
      {"HOROVOD_CROSS_SIZE", layout_.cross_size},
  };
  for (const Expected& e : expected) {
    int given = env_int(e.variable);
    if (given >= 0 && given != e.value) {
      throw Error(HVD_ERR_MISMATCH,
                  "bootstrap (rendezvous): rank " + std::to_string(rank_) +
                      ": " + e.variable + "=" + std::to_string(given) +
                      " but the ranks' host names give " +
                      std::to_string(e.value) + " (host '" + layout_.hostname +
                      "')");
    }
  }
}

}  // namespace hvd
