// A rank that speaks the control plane's protocol frame by frame, so a test
// can make it misbehave: stop answering (its sockets stay open, nobody reads
// or writes them) or close its sockets without saying bye, as a process that
// dies does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "control/frames.h"
#include "harness.h"

namespace hvd::test {

class ScriptedRank {
 public:
  ScriptedRank(FakeStore& store, int rank, int size,
               const ControlPlaneOptions& options);
  ~ScriptedRank();

  // Startup, as a real rank does it: connect to the parent, accept the
  // children, relay the host exchange.
  void join();
  // One gather (relaying the children's bundles, adding its own) and one
  // broadcast (relaying it down), as the real ranks call them.
  void relay_round();
  // Closes every socket without bye.
  void close_abruptly();

  int rank() const { return rank_; }
  std::string host() const { return "scripted-host"; }

 private:
  struct Frame {
    control::FrameType type;
    std::vector<uint8_t> payload;
  };
  Frame next_frame(int fd);  // skipping heartbeats and summons; bounded wait
  void send(int fd, control::FrameType type,
            const std::vector<uint8_t>& payload);
  void relay_gather(const std::vector<uint8_t>& mine);
  std::vector<uint8_t> relay_broadcast();

  FakeStore& store_;
  int rank_, size_;
  ControlPlaneOptions options_;
  int parent_fd_ = -1;
  std::vector<int> children_;
  std::vector<int> child_fds_;
  std::map<int, control::FrameReader> readers_;
  uint64_t gathers_ = 0, broadcasts_ = 0;
};

}  // namespace hvd::test
