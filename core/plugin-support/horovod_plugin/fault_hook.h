// A test-only fault a transport plugin of this tree (shm, tcp, gloo, ucx,
// ofi, mpi) injects into itself, for the fault-injection harness
// (tools/fault-inject), the rank-killed tests and the conformance suite's
// sever case.
// It exists only in a build configured with HOROVOD_FAULT_HOOKS (on with
// the test suite, off in wheels and with HOROVOD_BUILD_TESTS=OFF): there
// the plugin also exports
//
//   void hvd_fault_arm(int32_t action, int64_t after_posts);
//
// which a test job finds with dlsym. The action then happens on the core's
// own thread, at the after_posts-th data post (isend, irecv or a native
// collective) from then on, so where it lands depends on the job's ops and
// not on timing:
//   kill  the process raises SIGKILL (dies in the middle of that transfer);
//   sever the transport aborts itself naming this rank (HVD_ERR_ABORTED:
//         what is pending fails, what is posted later is refused) and cuts
//         its data connections from inside (its sockets shut down, its shm
//         rings unmapped, its Gloo pairs closed, its UCX endpoints closed
//         by force, its ofi connections silent; mpi has none to cut), as a
//         rank whose own links went down. The core
//         names this rank at fault for both (p2p/engine.cc, at_fault).
// Without the option none of this is compiled: fault_point() is empty.
#pragma once

#include <atomic>
#include <cstdint>

#ifdef HOROVOD_FAULT_HOOKS
#include <signal.h>
#endif

namespace hvd_plugin::fault {

enum Action : int32_t { kNone = 0, kKill = 1, kSever = 2 };

#ifdef HOROVOD_FAULT_HOOKS
struct Armed {
  std::atomic<int32_t> action{kNone};
  std::atomic<int64_t> countdown{0};
};

inline Armed& armed() {
  static Armed state;
  return state;
}

// The action due at this post, once; kNone otherwise.
inline Action take_due() {
  Armed& a = armed();
  if (a.action.load(std::memory_order_acquire) == kNone) return kNone;
  if (a.countdown.fetch_sub(1, std::memory_order_acq_rel) > 1) return kNone;
  return static_cast<Action>(a.action.exchange(kNone));
}

// At every data post of `transport` (which has sever()), before the post
// reaches it.
template <typename Transport>
inline void fault_point(Transport& transport) {
  switch (take_due()) {
    case kKill:
      raise(SIGKILL);
      break;
    case kSever:
      transport.sever();
      break;
    default:
      break;
  }
}

// The exported entry; one per plugin (in its plugin.cc).
#define HVD_PLUGIN_FAULT_HOOK_ENTRY                                        \
  extern "C" HVD_EXPORT void hvd_fault_arm(int32_t action,                 \
                                           int64_t after_posts) {          \
    auto& a = hvd_plugin::fault::armed();                                  \
    a.countdown.store(after_posts < 1 ? 1 : after_posts);                  \
    a.action.store(action, std::memory_order_release);                     \
  }
#else
template <typename Transport>
inline void fault_point(Transport&) {}
#define HVD_PLUGIN_FAULT_HOOK_ENTRY
#endif

}  // namespace hvd_plugin::fault
