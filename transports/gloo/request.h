// A send, receive or collective of the gloo transport. The plugin's threads
// finish it (complete()); the core's thread sees the result through test().
// It is freed once its last holder lets go (Transport::release): the core,
// when test() reports it, and a communicator's thread, while it runs it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "horovod/abi.h"

namespace hvd_gloo {

class Transport;

struct Request {
  Transport* transport = nullptr;
  // Requests of the connection not yet reported by test() (back-pressure).
  std::shared_ptr<std::atomic<uint32_t>> in_flight;
  std::atomic<bool> claimed{false};  // complete() was called
  std::atomic<bool> complete{false};
  std::atomic<int> holders{1};  // the core, until test() reports it done
  hvd_completion result{};
};

}  // namespace hvd_gloo
