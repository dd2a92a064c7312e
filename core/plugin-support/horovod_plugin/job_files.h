// The prefix of every file a plugin leaves in /dev/shm while it runs:
// "/hvd-<job id>-<pid>" (HOROVOD_JOB_ID; without one, "/hvd-p<pid>").
// horovodrun removes "/dev/shm/hvd-<job id>-*" after the job, so a rank that
// dies without closing its transports leaves nothing behind.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace hvd_plugin {

// Recomputed on each call: a forked child has a pid of its own.
inline std::string job_file_prefix() {
  std::string job;
  if (const char* id = std::getenv("HOROVOD_JOB_ID")) {
    // Only characters that are safe in a file name, at most 64 of them.
    for (const char* p = id; *p != '\0' && job.size() < 64; ++p) {
      char ch = *p;
      bool safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
                  ch == '-';
      job += safe ? ch : '_';
    }
  }
  std::string pid = std::to_string(getpid());
  return job.empty() ? "/hvd-p" + pid : "/hvd-" + job + "-" + pid;
}

}  // namespace hvd_plugin
