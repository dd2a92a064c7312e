// The core's point-to-point layer: what reducers reach through hvd_p2p_api.
//
// The engine owns the transports and one connection per peer (the mesh,
// see mesh.h): a peer on this host over the `intra` transport, others over
// `inter`. Where the job has a gpu scope ([transport] gpu open on every
// rank), a task whose memory is device memory (set_memory) goes over it
// instead: its messages over the gpu connections, when that transport has
// them, and native() hands out that transport's collectives. It composes
// transport tags from (process set, task sequence, sub-team, step, epoch)
// within each transport's tag_bits, splits messages above max_message_bytes
// into chunks (several in flight, matched in order), registers buffers through
// a registration cache when a transport needs it, and recycles its request
// objects, so nothing is allocated per message once warm. A transport failure
// is reported once per peer to the failure reporter, which the runtime passes
// on to ControlPlane::report_failure unless the control plane names the rank at
// fault first (a broken connection may only be a survivor closing its own). A
// transfer refused or ended because this rank's own side went down (its
// transport aborted itself) names this rank, never the healthy peer.
//
// Everything here runs on the background thread except abort().
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "horovod/reducer.h"
#include "p2p/native.h"
#include "p2p/nested_collectives.h"
#include "p2p/registration_cache.h"
#include "p2p/tags.h"
#include "p2p/team.h"
#include "p2p/transport.h"

namespace hvd::p2p {
class Engine;
}

// The context of one task (hvd_p2p): its team and the tag fields of its
// messages. Sub-teams are kept by the task's root context and reused by the
// next task that asks for the same members in the same order.
struct hvd_p2p_s {
  hvd::p2p::Engine* engine = nullptr;
  const hvd::p2p::Team* team = nullptr;
  hvd::p2p::TagFields tag;
  hvd_p2p_s* root = this;
  // The transport whose native collectives native() handed out last.
  hvd::p2p::Transport* native_transport = nullptr;
  // What native() handed out last, for which members and memory: a team
  // of the same members gets the same communicator, so the next task on
  // this context skips the search.
  struct NativeMemo {
    std::vector<int32_t> members;  // world ranks, team order; empty: none
    bool device = false;           // over the gpu scope's transport
    const hvd_transport_collectives* ext = nullptr;
    hvd_coll_comm* comm = nullptr;
    hvd::p2p::Transport* transport = nullptr;
  } native_memo;
  // Where the task's buffers are (Engine::set_memory); sub-teams inherit it.
  hvd_device memory{HVD_MEM_HOST, 0};
  // Root only:
  std::vector<std::unique_ptr<hvd::p2p::Team>> sub_teams;
  std::vector<std::unique_ptr<hvd_p2p_s>> sub_contexts;
  size_t subteams_used = 0;
};

struct hvd_p2p_request_s;

namespace hvd::p2p {

// A connection to one peer and what sending to it needs.
struct Link {
  int32_t peer = -1;  // world rank
  Transport* transport = nullptr;
  hvd_conn* conn = nullptr;
  RegistrationCache* cache = nullptr;  // null when no registration needed
  const TagLayout* tags = nullptr;
  uint64_t chunk_bytes = 0;  // largest message
  uint32_t window = 1;       // chunks in flight per request
};

class Engine {
 public:
  Engine(int32_t world_rank, int32_t world_size, uint64_t epoch);
  ~Engine();  // closes connections, then finalizes transports
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  int32_t world_rank() const { return world_rank_; }
  int32_t world_size() const { return world_size_; }
  uint64_t epoch() const { return epoch_; }

  // Set-up (the mesh calls these).
  Transport* add_transport(std::unique_ptr<Transport> transport);
  // The gpu scope's transport (at most one); its connections, if any, are
  // added with add_link like the others.
  Transport* add_gpu_transport(std::unique_ptr<Transport> transport);
  // Why the job has no gpu scope (the mesh's agreed reason).
  void set_gpu_unavailable(std::string why) {
    gpu_unavailable_ = std::move(why);
  }
  void add_link(int32_t peer, Transport* transport, hvd_conn* conn);
  const std::vector<std::unique_ptr<Transport>>& transports() const {
    return transports_;
  }
  // Over the intra or inter transport.
  bool connected(int32_t peer) const;
  // Over the gpu scope's transport.
  bool gpu_connected(int32_t peer) const;
  // The intra or inter transport serving `peer` (null when not connected).
  const Transport* transport_of(int32_t peer) const {
    return connected(peer) ? links_[peer].transport : nullptr;
  }
  // The gpu scope's transport; null when the job has none, and then
  // gpu_unavailable() says why.
  const Transport* gpu_transport() const { return gpu_; }
  const std::string& gpu_unavailable() const { return gpu_unavailable_; }
  // Whether any host-memory transport needs registered memory (then user
  // buffers go through the registered fusion buffers).
  bool needs_registration() const;
  // Registers a long-lived host buffer with every host-memory transport
  // that needs it.
  void register_permanent(const void* buf, size_t bytes);
  void forget_registration(const void* buf, size_t bytes);

  // Who runs nested collectives (hvd_p2p_api.collective); without one the
  // call answers HVD_ERR_UNSUPPORTED. Not owned; must outlive the tasks.
  void set_nested(NestedCollectives* nested) { nested_ = nested; }

  // Waits of the engine that no transport bounds (a native communicator's
  // creation, which waits for every member) end once `interrupted` returns
  // true; the runtime's: a failure was noted. Called on the waiting thread.
  void set_interrupted(std::function<bool()> interrupted) {
    interrupted_ = std::move(interrupted);
  }

  // Called once per failing peer, with a reason naming transport and peer.
  void set_failure_reporter(
      std::function<void(int32_t peer, const std::string& reason)> reporter);

  // The table every reducer gets, and a context for one task on `team`.
  static const hvd_p2p_api* api();
  void reset_context(hvd_p2p_s* context, const Team* team, uint32_t process_set,
                     uint64_t sequence);
  // The task's buffers are on `device` (host memory after reset_context).
  static void set_memory(hvd_p2p_s* context, hvd_device device) {
    context->memory = device;
  }

  // The data path (the hvd_p2p_api functions land here).
  hvd_status isend(hvd_p2p_s* p, int32_t peer, const void* buf, size_t bytes,
                   uint32_t step, hvd_p2p_request_s** out);
  hvd_status irecv(hvd_p2p_s* p, int32_t peer, void* buf, size_t bytes,
                   uint32_t step, hvd_p2p_request_s** out);
  hvd_status test(hvd_p2p_request_s* req, int32_t* done, hvd_completion* out);
  hvd_status subteam(hvd_p2p_s* p, const int32_t* members, int32_t count,
                     hvd_p2p_s** out);
  // Native collectives of the transport that reaches every other member of
  // the team (see native.h): the gpu scope's for a task on device memory.
  // And the test of their requests.
  const hvd_transport_collectives* native(hvd_p2p_s* p, hvd_coll_comm** comm);
  hvd_status native_test(hvd_p2p_s* p, hvd_request* req, int32_t* done,
                         hvd_completion* out);
  hvd_status collective(hvd_p2p_s* p, const char* reducer,
                        const hvd_coll_args* args, hvd_p2p_request_s** out);

  // Drives manual-progress transports.
  void progress();

  // Waiting: each wait() is one poll of a spin that lasts `spin` from the
  // last activity (a message posted or completed, or note_activity(); it
  // is counted, and timed at the next wait(), so the data path reads no
  // clock);
  // past it, wait() sleeps on the transports' wait fds
  // (armed first) and `extra_fds` for at most `max_sleep`. A transport
  // without a wait fd limits the sleep to a short nap. Returns the
  // `extra_fds` entries of the poll (revents: what came), empty when it
  // did not sleep.
  void set_spin_time(std::chrono::nanoseconds spin) { spin_ = spin; }
  // This rank shares its cores with more ranks of its host than they
  // number (core_sharing.h): a waiting rank then yields its core at every
  // poll of the spin (after a short pure spin where it is pinned to one
  // core), as the peer it waits for may need it.
  void set_oversubscribed(bool on);
  void note_activity() { ++activity_; }
  std::span<const pollfd> wait(std::chrono::nanoseconds max_sleep,
                               std::span<const int> extra_fds);
  std::span<const pollfd> wait(std::chrono::nanoseconds max_sleep,
                               int extra_fd) {
    return wait(max_sleep,
                std::span<const int>(&extra_fd, extra_fd >= 0 ? 1 : 0));
  }

  // Any thread: every transport fails its pending requests with `reason`.
  void abort(hvd_status reason, int32_t peer);

  // The latest failure message of the data path ("" if none).
  const std::string& last_error() const { return last_error_; }

 private:
  // The link to world rank `peer` for a task whose buffers are on `memory`.
  Link& link_for(hvd_device memory, int32_t peer);
  hvd_status post(hvd_p2p_s* p, bool send, int32_t peer, void* buf,
                  size_t bytes, uint32_t step, hvd_p2p_request_s** out);
  void post_chunks(hvd_p2p_request_s* req);
  // The rank at fault for a failed transfer on `link`: the one `named` by
  // the transport's completion (-1: none); else, once this engine was
  // aborted naming a rank, that rank; else the peer.
  int32_t at_fault(const Link& link, int32_t named) const;
  // The same for a post the transport refused with `status`, except that
  // HVD_ERR_ABORTED from a transport this engine did not abort (it aborted
  // itself: this rank's own links are down) names this rank.
  int32_t refused_by(const Link& link, hvd_status status) const;
  void fail(hvd_p2p_request_s* req, hvd_status status, int32_t peer,
            const std::string& message);
  hvd_p2p_request_s* take_request();
  void give_back(hvd_p2p_request_s* req);
  hvd_status test_nested(hvd_p2p_request_s* req, int32_t* done,
                         hvd_completion* out);
  // Aborts and frees the nested tasks still running under `root` (all of
  // them when null): their parent went away without waiting for them.
  void drop_nested(const hvd_p2p_s* root);

  int32_t world_rank_, world_size_;
  uint64_t epoch_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<std::unique_ptr<RegistrationCache>> caches_;  // per transport
  std::vector<std::unique_ptr<TagLayout>> layouts_;         // per transport
  std::vector<Link> links_;                                 // per world rank
  Transport* gpu_ = nullptr;     // the gpu scope's transport, if any
  std::vector<Link> gpu_links_;  // per world rank, over gpu_
  std::string gpu_unavailable_;
  std::vector<std::unique_ptr<hvd_p2p_request_s>> requests_;
  hvd_p2p_request_s* free_ = nullptr;
  NestedCollectives* nested_ = nullptr;
  std::vector<hvd_p2p_request_s*> nested_live_;
  NativeComms native_comms_;
  std::function<void(int32_t, const std::string&)> reporter_;
  std::function<bool()> interrupted_;
  std::vector<bool> reported_;
  std::atomic<bool> aborted_{false};
  std::atomic<int32_t> abort_peer_{-1};  // the rank abort() named
  std::string last_error_;
  std::chrono::nanoseconds spin_{std::chrono::microseconds(50)};
  bool oversubscribed_ = false;
  std::chrono::nanoseconds pure_spin_{0};  // before the first yield
  std::chrono::steady_clock::time_point last_activity_;
  uint64_t activity_ = 0;           // note_activity() calls
  uint64_t activity_seen_ = 0;      // activity_ when last_activity_ was set
  std::vector<pollfd> wait_polls_;  // wait()'s, kept for their storage
};

}  // namespace hvd::p2p
