// MPI as this process has it, shared by every instance of the transport:
// MPI is initialised once (or found initialised by the application) and
// finalised at exit, since MPI cannot be initialised twice in a process.
// All instances talk over one private duplicate of MPI_COMM_WORLD; the
// MPI tag of a message holds the receiving connection's channel above the
// core's tag bits, and channel 0 carries the connection handshakes.
//
// Called only from the core's background thread (one call at a time), so
// MPI is initialised with MPI_THREAD_SERIALIZED.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "horovod/host.h"

namespace hvd_mpi {

// A handshake message (channel 0).
struct Control {
  enum Kind : uint32_t { kHello = 1, kWelcome = 2, kReject = 3 };
  uint32_t magic;
  uint32_t kind;
  uint32_t to;       // hello: the listener; welcome/reject: its channel
  uint32_t channel;  // the sender's receiving channel
  int32_t rank;      // the sender's world rank (hvd_conn_info.self_rank)
  int32_t reason;    // reject: the status the connector fails with
  uint64_t epoch;
};

// Someone waiting for handshake messages.
class ControlSink {
 public:
  virtual ~ControlSink() = default;
  virtual void deliver(const Control& message, int source) = 0;
};

class Library {
 public:
  // Initialises MPI and the private communicator on first use; throws a
  // Failure. `host` is the first caller's, for logging and its world rank.
  static Library& get(const hvd_host* host);

  MPI_Comm comm() const { return comm_; }
  // The parent of the collectives' communicators: a duplicate apart from
  // comm(), since MPI_Comm_create_group exchanges tagged messages on its
  // parent, which the handshake receive on comm() would take.
  MPI_Comm group_parent() const { return group_parent_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The MPI rank of a world rank (the core's numbering), -1 if none.
  int mpi_rank_of(int32_t world_rank) const;
  uint32_t core_tag_bits() const { return core_bits_; }
  int mpi_tag(uint32_t channel, uint64_t core_tag) const {
    return static_cast<int>((uint64_t{channel} << core_bits_) |
                            (core_tag & ((uint64_t{1} << core_bits_) - 1)));
  }

  // Channels for receiving, and the sinks of handshake messages.
  uint32_t open_channel(ControlSink* sink);
  void close_channel(uint32_t channel);
  uint32_t open_listener(ControlSink* sink);
  void close_listener(uint32_t id);
  void send_control(const Control& message, int dest);
  // Delivers the handshake messages that arrived; reaps finished sends.
  void poll();

  // "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line).
  static std::string library_version();

 private:
  explicit Library(const hvd_host* host);
  void post_control_receive();

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm group_parent_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  uint32_t core_bits_ = 0, channel_count_ = 0;
  std::vector<int> mpi_rank_of_world_;
  uint32_t next_channel_ = 1, next_listener_ = 1;
  std::unordered_map<uint32_t, ControlSink*> channels_, listeners_;
  Control incoming_{};
  MPI_Request incoming_request_ = MPI_REQUEST_NULL;
  struct Outgoing {
    Control message;
    MPI_Request request;
  };
  std::deque<std::unique_ptr<Outgoing>> outgoing_;
};

// "MPI_Isend: MPI_ERR_TRUNCATE: message truncated".
std::string mpi_error_text(const char* call, int code);
// Throws a Failure (HVD_ERR_SYSTEM) unless `code` is MPI_SUCCESS.
void check_mpi(const char* call, int code);

}  // namespace hvd_mpi
