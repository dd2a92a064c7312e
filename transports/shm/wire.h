// Checks of what a peer hands over in a shm handshake, kept free of sockets
// and mappings so they can be tested and fuzzed alone: each returns why it is
// refused, or "" when it is acceptable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol.h"

namespace hvd_shm {

// Rings are a power of two from 4 KiB to 1 GiB (the ring_size option's
// range); a segment announcing anything else is refused.
constexpr uint64_t kMinRingBytes = 4096;
constexpr uint64_t kMaxRingBytes = uint64_t{1} << 30;

// A Hello (kind kHello) or its reply (kHelloReply) of `received` bytes.
std::string hello_problem(const Hello& hello, size_t received,
                          HelloKind kind);

// The connection segment a peer created, mapped at `base` with `size` bytes,
// against the ring size its Hello announced. Everything the rings are built
// from is checked: magic, version, ring size, data offset, total size.
std::string segment_problem(const void* base, size_t size,
                            uint64_t hello_ring_bytes);

}  // namespace hvd_shm
