// What a process holds, read from /proc and /dev/shm: the figures a soak
// watches for growth.
#pragma once

#include <cstdint>
#include <string>

namespace hvd_soak {

struct ProcessUsage {
  int64_t rss_kib = 0;    // VmRSS
  int64_t fds = 0;        // entries of /proc/self/fd
  int64_t threads = 0;    // Threads
  // /dev/shm segments mapped here (the shm transport unlinks its segments
  // once every peer has mapped them, so the mappings are what stay), and
  // files named <shm_prefix>* still in /dev/shm.
  int64_t shm_mapped_kib = 0;
  int64_t shm_segments = 0;
  int64_t shm_files = 0;
};

// `shm_prefix`: "hvd-<job id>-" under horovodrun (the job's segments);
// "hvd-" when no job id is known.
ProcessUsage read_usage(const std::string& shm_prefix);

// "rss 123.4 MiB, fds 25, threads 4, /dev/shm 64.0 MiB mapped in 3
// segments, 0 files"
std::string describe(const ProcessUsage& u);

}  // namespace hvd_soak
