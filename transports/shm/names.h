// Names of this process's shared-memory objects and sockets. Everything is
// "/hvd-<job id>-<pid>-<kind><n>", so the launcher can remove what a crashed
// job left in /dev/shm (HOROVOD_JOB_ID; without one, "/hvd-p<pid>-...").
// Sockets live in the abstract namespace under the same name without the
// slash, which leaves nothing behind at all.
#pragma once

#include <cstdint>
#include <string>

namespace hvd_shm {

// "/hvd-<job>-<pid>", recomputed each call (a forked child differs).
std::string name_prefix();

// A new name under the prefix: kind 'c' connection segment, 'm' memory
// segment, 'l' listening socket. Unique within the process.
std::string next_name(char kind);

// A new id for a memory segment of this process.
uint64_t next_memory_id();

// The name of memory segment `id` under a process's prefix.
std::string memory_segment_name(const std::string& prefix, uint64_t id);

// This kernel's boot id (a UUID): two processes share a host, and so can
// share memory, when it matches.
const std::string& boot_id();

}  // namespace hvd_shm
