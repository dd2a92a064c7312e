#include "bootstrap/pmix_bootstrap.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "bootstrap/pmix_library.h"
#include "common/error.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

const PmixLibrary& pmix() { return pmix_library(); }

std::string pmix_text(pmix_status_t rc) {
  return std::string(pmix().error_string(rc)) + " (" + std::to_string(rc) + ")";
}

// PMIX_TIMEOUT counts whole seconds, and 0 would mean "forever".
int timeout_seconds(std::chrono::milliseconds timeout) {
  int64_t s = (std::max<int64_t>(timeout.count(), 1) + 999) / 1000;
  return static_cast<int>(std::min<int64_t>(s, INT32_MAX));
}

pmix_proc_t proc_of(const std::string& nspace, pmix_rank_t rank) {
  pmix_proc_t proc;
  PMIX_PROC_CONSTRUCT(&proc);
  PMIX_LOAD_PROCID(&proc, nspace.c_str(), rank);
  return proc;
}

void check_key(const std::string& key) {
  if (key.empty() || key.size() > PMIX_MAX_KEYLEN) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "bootstrap (pmix): key of " + std::to_string(key.size()) +
                    " bytes (must be 1 to " + std::to_string(PMIX_MAX_KEYLEN) +
                    ")");
  }
}

}  // namespace

PmixBootstrap::PmixBootstrap(std::chrono::milliseconds start_timeout) {
  collective_timeout_ = bounded(start_timeout);
  pmix_proc_t me;
  PMIX_PROC_CONSTRUCT(&me);
  pmix_status_t rc = pmix().init(&me, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    throw Error(HVD_ERR_SYSTEM,
                "bootstrap (pmix): PMIx_Init failed: " + pmix_text(rc) +
                    " (was this process started by mpirun or srun?)");
  }
  nspace_ = me.nspace;
  rank_ = static_cast<int>(me.rank);

  pmix_proc_t job = proc_of(nspace_, PMIX_RANK_WILDCARD);
  pmix_value_t* value = nullptr;
  rc = pmix().get(&job, PMIX_JOB_SIZE, nullptr, 0, &value);
  if (rc != PMIX_SUCCESS || !value || value->type != PMIX_UINT32) {
    if (value) pmix().release(value);
    pmix().finalize(nullptr, 0);
    throw Error(HVD_ERR_SYSTEM,
                "bootstrap (pmix): rank " + std::to_string(rank_) +
                    ": cannot read PMIX_JOB_SIZE: " + pmix_text(rc));
  }
  size_ = static_cast<int>(value->data.uint32);
  pmix().release(value);
  try {
    compute_layout();
  } catch (...) {
    pmix().finalize(nullptr, 0);
    throw;
  }
}

PmixBootstrap::~PmixBootstrap() { pmix().finalize(nullptr, 0); }

void PmixBootstrap::put(const std::string& key,
                        const std::vector<uint8_t>& value) {
  check_key(key);
  pmix_value_t v;
  PMIX_VALUE_CONSTRUCT(&v);
  v.type = PMIX_BYTE_OBJECT;
  // PMIx_Put copies the bytes; it only takes them through a non-const field.
  v.data.bo.bytes = reinterpret_cast<char*>(const_cast<uint8_t*>(value.data()));
  v.data.bo.size = value.size();
  std::lock_guard<std::mutex> lock(mutex_);
  pmix_status_t rc = pmix().put(PMIX_GLOBAL, key.c_str(), &v);
  if (rc == PMIX_SUCCESS) rc = pmix().commit();
  if (rc != PMIX_SUCCESS) {
    throw Error(HVD_ERR_SYSTEM, "bootstrap (pmix): rank " +
                                    std::to_string(rank_) + ": putting key '" +
                                    key + "': " + pmix_text(rc));
  }
}

std::vector<uint8_t> PmixBootstrap::get(int rank, const std::string& key,
                                        std::chrono::milliseconds timeout) {
  check_key(key);
  if (rank < 0 || rank >= size_) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "bootstrap (pmix): get of key '" +
                                              key + "' from rank " +
                                              std::to_string(rank) + " (size " +
                                              std::to_string(size_) + ")");
  }
  timeout = bounded(timeout);
  auto deadline = Clock::now() + timeout;
  pmix_proc_t peer = proc_of(nspace_, static_cast<pmix_rank_t>(rank));
  // Open MPI's and Slurm's servers wait for a missing key up to PMIX_TIMEOUT
  // (direct modex); a server that answers "not found" at once is polled.
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    pmix_info_t info;
    PMIX_INFO_CONSTRUCT(&info);
    int seconds = timeout_seconds(left);
    pmix().info_load(&info, PMIX_TIMEOUT, &seconds, PMIX_INT);
    pmix_value_t* value = nullptr;
    pmix_status_t rc = pmix().get(&peer, key.c_str(), &info, 1, &value);
    pmix().destruct(&info);
    if (rc == PMIX_SUCCESS && value && value->type == PMIX_BYTE_OBJECT) {
      const uint8_t* bytes =
          reinterpret_cast<const uint8_t*>(value->data.bo.bytes);
      std::vector<uint8_t> out(bytes, bytes + value->data.bo.size);
      pmix().release(value);
      return out;
    }
    if (value) pmix().release(value);
    if (rc == PMIX_SUCCESS) {
      throw Error(HVD_ERR_SYSTEM, "bootstrap (pmix): key '" + key +
                                      "' of rank " + std::to_string(rank) +
                                      " is not a byte object");
    }
    bool missing = rc == PMIX_ERR_NOT_FOUND || rc == PMIX_ERR_TIMEOUT;
    if (!missing) {
      throw Error(HVD_ERR_SYSTEM,
                  "bootstrap (pmix): rank " + std::to_string(rank_) +
                      ": getting key '" + key + "' of rank " +
                      std::to_string(rank) + ": " + pmix_text(rc),
                  rank);
    }
    if (Clock::now() + pause >= deadline) {
      throw Error(HVD_ERR_TIMEOUT,
                  "bootstrap (pmix): rank " + std::to_string(rank_) +
                      " timed out after " + std::to_string(timeout.count()) +
                      " ms waiting for key '" + key + "' of rank " +
                      std::to_string(rank),
                  rank);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

void PmixBootstrap::fence(bool collect_data) {
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  int seconds = timeout_seconds(collective_timeout_);
  pmix().info_load(&info[0], PMIX_TIMEOUT, &seconds, PMIX_INT);
  pmix().info_load(&info[1], PMIX_COLLECT_DATA, &collect_data, PMIX_BOOL);
  pmix_status_t rc = pmix().fence(nullptr, 0, info, 2);
  pmix().destruct(&info[0]);
  pmix().destruct(&info[1]);
  if (rc != PMIX_SUCCESS) {
    throw Error(rc == PMIX_ERR_TIMEOUT ? HVD_ERR_TIMEOUT : HVD_ERR_PEER_FAILED,
                "bootstrap (pmix): rank " + std::to_string(rank_) +
                    ": fence failed: " + pmix_text(rc));
  }
}

std::vector<std::vector<uint8_t>> PmixBootstrap::allgather(
    const std::vector<uint8_t>& mine) {
  std::string key = next_collective_key();
  put(key, mine);
  fence(true);
  std::vector<std::vector<uint8_t>> all;
  all.reserve(size_);
  for (int r = 0; r < size_; ++r) {
    all.push_back(r == rank_ ? mine : get(r, key, collective_timeout_));
  }
  return all;
}

void PmixBootstrap::barrier() { fence(false); }

}  // namespace hvd
