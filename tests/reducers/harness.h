// An in-process harness for reducer plugins: N ranks as threads of one
// process, talking through in-memory mailboxes that implement hvd_p2p_api.
//
// Messages are matched by (team, sender, receiver, step) in the order they
// were posted, like the core's p2p layer. A send's data is read only when a
// receive matches it (rendezvous), so a reducer that touches a buffer it is
// still sending from, or depends on sends completing early, fails here.
// With chaos on, completions are reported late at random and sends are
// refused at random for back-pressure. A rank can be declared failed: its
// pending and future transfers complete with HVD_ERR_PEER_FAILED naming it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "horovod/reducer.h"

namespace hvd::test {

struct Transfer;

// The shared medium of one world of ranks.
class Fabric {
 public:
  explicit Fabric(int32_t world_size);
  ~Fabric();
  int32_t world_size() const { return (int32_t)wake_.size(); }

  // Takes `t` (freed with the fabric; a reducer may abandon requests).
  hvd_status post(Transfer* t);
  // Declares `rank` failed: its peers' transfers with it fail.
  void fail_rank(int32_t rank);
  // Sleeps until something may have changed for `rank` since `seen`.
  uint64_t generation(int32_t rank);
  void wait(int32_t rank, uint64_t seen);
  // Wakes every sleeping rank (after an abort).
  void wake_all();
  // Whether a transfer has finished, under the fabric's lock.
  bool finished(const Transfer* t);

 private:
  using Key = std::tuple<uint64_t, int32_t, int32_t, uint32_t>;
  void complete(Transfer* t, hvd_status status, int32_t peer, uint64_t bytes);
  void match(Transfer* send, Transfer* recv);
  void wake(int32_t rank);  // mutex held

  std::mutex mutex_;
  std::vector<std::unique_ptr<Transfer>> transfers_;  // every one posted
  std::map<Key, std::deque<Transfer*>> sends_, recvs_;
  std::vector<bool> failed_;
  struct Wake {
    std::condition_variable cv;
    uint64_t generation = 0;
  };
  std::vector<Wake> wake_;
};

// Chaos settings of a rank's contexts.
struct Chaos {
  bool on = false;
  uint64_t seed = 1;
};

}  // namespace hvd::test

// One rank's view of one team (the harness's hvd_p2p).
struct hvd_p2p_s {
  hvd::test::Fabric* fabric = nullptr;
  uint64_t channel = 0;  // keeps teams' messages apart
  int32_t world_rank = 0;
  hvd_team team{};
  std::vector<int32_t> world_ranks, host_of;
  std::vector<std::unique_ptr<hvd_p2p_s>> subteams;
  std::mt19937_64 rng;
  bool chaos = false;
  bool busy = false;  // a late completion or a refusal is pending: poll again

  // `members`: world ranks in team order; this rank must be one of them.
  hvd_p2p_s(hvd::test::Fabric* fabric, uint64_t channel,
            std::vector<int32_t> members, int32_t world_rank,
            hvd::test::Chaos chaos);
};

namespace hvd::test {

// The p2p table every rank's reducer gets.
const hvd_p2p_api* p2p_api();

// A minimal host: logging to stderr, a configuration table, host memory
// (counted), the core's device layer; bootstrap is not offered.
class TestHost {
 public:
  // config: key -> value ("64KiB" strings, or integers as "int:64").
  explicit TestHost(const std::string& table_name,
                    std::map<std::string, std::string> config = {});
  const hvd_host* table() const { return &host_; }
  const std::vector<std::string>& config_errors() const { return errors_; }
  int64_t allocations() const { return allocations_; }

 private:
  static int32_t log_enabled(void*, hvd_log_level level);
  static void log(void*, hvd_log_level level, const char* message);
  static hvd_status config_error(void* ctx, const char* key,
                                 const char* message);
  static void* mem_alloc(void* ctx, size_t bytes, size_t alignment);
  static void mem_free(void* ctx, void* p);

  hvd_host host_{};
  hvd_world world_{};
  hvd_config_table table_{};
  std::string name_;
  std::vector<std::string> keys_, strings_;
  std::vector<hvd_config_value> values_;
  std::vector<std::string> errors_;
  std::mutex mutex_;
  int64_t allocations_ = 0;
};

// A reducer plugin loaded from the build tree with dlopen.
class ReducerPlugin {
 public:
  explicit ReducerPlugin(const std::string& name);  // "ring", "tree"
  ~ReducerPlugin();
  const hvd_reducer_api& api() const { return *api_; }
  const std::string& path() const { return path_; }

 private:
  void* library_ = nullptr;
  const hvd_reducer_api* api_ = nullptr;
  std::string path_;
};

// One reducer instance per rank (as in a job: one per process).
class RankReducers {
 public:
  RankReducers(const ReducerPlugin& plugin, int32_t ranks,
               std::map<std::string, std::string> config = {});
  ~RankReducers();
  hvd_reducer* operator[](int32_t rank) const { return reducers_[rank]; }
  const TestHost& host(int32_t rank) const { return *hosts_[rank]; }
  const hvd_reducer_api& api() const { return plugin_.api(); }

 private:
  const ReducerPlugin& plugin_;
  std::vector<std::unique_ptr<TestHost>> hosts_;
  std::vector<hvd_reducer*> reducers_;
};

struct RankOutcome {
  hvd_status posted = HVD_OK;
  hvd_status status = HVD_OK;
  hvd_completion completion{};
  std::string message;
};

// Runs one collective on every rank of a world of `members.size()` ranks
// (team rank i is world rank members[i]), each rank on its own thread, and
// returns what each saw. `args(rank)` gives the rank's arguments.
// `before_post(rank)`, when set, runs on the rank's thread first; returning
// false makes the rank stop without posting (a rank that died).
struct RunOptions {
  Chaos chaos;
  std::function<bool(int32_t team_rank)> before_post;
  // Runs on the calling thread once every rank posted (or stopped), with
  // the tasks (NULL for ranks that stopped) and the fabric.
  std::function<void(const std::vector<hvd_task*>&, Fabric&)> meanwhile;
  // Runs on a rank's thread when its task has ended successfully.
  std::function<void(int32_t team_rank)> after_done;
};

std::vector<RankOutcome> run_collective(
    const RankReducers& reducers, const std::vector<int32_t>& members,
    int32_t world_size, const std::function<hvd_coll_args(int32_t)>& args,
    const RunOptions& options = {});

// Every world rank in order: {0, 1, ..., n-1}.
std::vector<int32_t> all_ranks(int32_t n);

}  // namespace hvd::test
