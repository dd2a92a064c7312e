#include "library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "common/host_access.h"
#include "horovod_plugin/boundary.h"

namespace hvd_mpi {
namespace {

constexpr uint32_t kMagic = 0x4d504931;  // "MPI1"
constexpr uint32_t kMinCoreBits = 12;    // what the core's tag layout needs
constexpr uint32_t kMaxChannelBits = 10;

bool g_we_initialised = false;

void finalise_at_exit() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (g_we_initialised && !finalised) MPI_Finalize();
}

// MPI is finalised at exit, so this library must stay loaded until then;
// and Open MPI's own components expect libmpi's symbols to be global.
void pin_libraries() {
  Dl_info self{}, mpi{};
  if (dladdr(reinterpret_cast<void*>(&finalise_at_exit), &self) &&
      self.dli_fname) {
    dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &mpi) &&
      mpi.dli_fname) {
    dlopen(mpi.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  }
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

}  // namespace

std::string mpi_error_text(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(call) + ": " + std::string(text, length);
}

void check_mpi(const char* call, int code) {
  if (code != MPI_SUCCESS) {
    hvd_plugin::fail(HVD_ERR_SYSTEM, "mpi: " + mpi_error_text(call, code));
  }
}

std::string Library::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, length);
  size_t end = version.find_first_of(",\n");
  if (end != std::string::npos) version.resize(end);
  while (!version.empty() && version.back() == ' ') version.pop_back();
  return version;
}

Library& Library::get(const hvd_host* host) {
  static Library* library = new Library(host);  // lives until exit
  return *library;
}

Library::Library(const hvd_host* host) {
  using hvd_transport_common::log;
  pin_libraries();
  int initialised = 0, provided = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialised);
  if (!initialised) {
    // Open MPI 4.1's shared-memory single copy (CMA) completes a send only
    // when the receiver's next MPI call returns an acknowledgement, after
    // the receive has completed there: a rank that then waits for its peer
    // outside MPI (the control plane) leaves the peer's send hanging. It
    // also writes a message whole into a smaller receive. Copy-in/copy-out
    // has neither problem; OMPI_MCA_btl_vader_single_copy_mechanism set by
    // the user wins.
    if (setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0) == 0) {
      log(host, HVD_LOG_DEBUG,
          std::string("btl_vader_single_copy_mechanism: ") +
              std::getenv("OMPI_MCA_btl_vader_single_copy_mechanism"));
    }
    check_mpi(
        "MPI_Init_thread",
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    g_we_initialised = true;
    std::atexit(finalise_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    log(host, HVD_LOG_WARNING,
        std::string("MPI gives ") + thread_level_name(provided) +
            "; this transport calls MPI from the runtime's background "
            "thread, which needs MPI_THREAD_SERIALIZED (the application "
            "must not call MPI while a collective runs)");
  }
  check_mpi("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  check_mpi("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &group_parent_));
  MPI_Comm_set_errhandler(group_parent_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);

  void* attr = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag);
  uint64_t tag_ub = flag && attr ? uint64_t(*static_cast<int*>(attr)) : 32767;
  uint32_t bits = 0;
  while (bits < 31 && (uint64_t{1} << (bits + 1)) - 1 <= tag_ub) ++bits;
  uint32_t channel_bits = std::clamp<uint32_t>(
      bits > kMinCoreBits ? bits - kMinCoreBits : 0, 2, kMaxChannelBits);
  core_bits_ = bits - channel_bits;
  channel_count_ = 1u << channel_bits;

  int mine = host->world ? host->world->rank : rank_;
  std::vector<int> world_of_mpi(size_);
  check_mpi(
      "MPI_Allgather",
      MPI_Allgather(&mine, 1, MPI_INT, world_of_mpi.data(), 1, MPI_INT, comm_));
  int world_size = *std::max_element(world_of_mpi.begin(), world_of_mpi.end());
  mpi_rank_of_world_.assign(static_cast<size_t>(world_size) + 1, -1);
  for (int r = 0; r < size_; ++r) {
    if (world_of_mpi[r] >= 0) mpi_rank_of_world_[world_of_mpi[r]] = r;
  }
  log(host, HVD_LOG_DEBUG,
      library_version() + ": rank " + std::to_string(rank_) + " of " +
          std::to_string(size_) + ", " + thread_level_name(provided) +
          ", MPI_TAG_UB " + std::to_string(tag_ub) + " (" +
          std::to_string(core_bits_) + " tag bits, " +
          std::to_string(channel_count_ - 1) + " channels)");
  post_control_receive();
}

int Library::mpi_rank_of(int32_t world_rank) const {
  if (world_rank < 0 ||
      static_cast<size_t>(world_rank) >= mpi_rank_of_world_.size()) {
    return -1;
  }
  return mpi_rank_of_world_[world_rank];
}

uint32_t Library::open_channel(ControlSink* sink) {
  // Round robin, so a channel is reused only long after it was closed and
  // a stale message on it has long been matched or abandoned.
  for (uint32_t tries = 0; tries < channel_count_; ++tries) {
    uint32_t channel = next_channel_;
    next_channel_ = next_channel_ + 1 < channel_count_ ? next_channel_ + 1 : 1;
    if (channels_.emplace(channel, sink).second) return channel;
  }
  hvd_plugin::fail(HVD_ERR_OUT_OF_MEMORY,
                   "mpi: all " + std::to_string(channel_count_ - 1) +
                       " connection channels are in use");
}

void Library::close_channel(uint32_t channel) { channels_.erase(channel); }

uint32_t Library::open_listener(ControlSink* sink) {
  uint32_t id = next_listener_++;
  listeners_[id] = sink;
  return id;
}

void Library::close_listener(uint32_t id) { listeners_.erase(id); }

void Library::send_control(const Control& message, int dest) {
  auto out = std::make_unique<Outgoing>();
  out->message = message;
  out->message.magic = kMagic;
  check_mpi("MPI_Isend", MPI_Isend(&out->message, sizeof(Control), MPI_BYTE,
                                   dest, mpi_tag(0, 0), comm_, &out->request));
  outgoing_.push_back(std::move(out));
}

void Library::post_control_receive() {
  check_mpi("MPI_Irecv",
            MPI_Irecv(&incoming_, sizeof(Control), MPI_BYTE, MPI_ANY_SOURCE,
                      mpi_tag(0, 0), comm_, &incoming_request_));
}

void Library::poll() {
  for (;;) {
    int done = 0;
    MPI_Status status;
    check_mpi("MPI_Test", MPI_Test(&incoming_request_, &done, &status));
    if (!done) break;
    Control message = incoming_;
    int source = status.MPI_SOURCE;
    post_control_receive();
    if (message.magic != kMagic) continue;
    auto& sinks = message.kind == Control::kHello ? listeners_ : channels_;
    auto it = sinks.find(message.to);
    if (it != sinks.end()) {
      it->second->deliver(message, source);
    } else if (message.kind == Control::kHello) {
      Control reject{};
      reject.kind = Control::kReject;
      reject.to = message.channel;
      reject.reason = HVD_ERR_PEER_FAILED;
      reject.epoch = message.epoch;
      send_control(reject, source);
    }
  }
  while (!outgoing_.empty()) {
    int done = 0;
    MPI_Test(&outgoing_.front()->request, &done, MPI_STATUS_IGNORE);
    if (!done) break;
    outgoing_.pop_front();
  }
}

}  // namespace hvd_mpi
