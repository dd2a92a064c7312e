#include "names.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>

namespace hvd_shm {
namespace {

std::atomic<uint64_t> g_counter{0};

// The job id restricted to characters that are safe in a file name.
std::string job_part() {
  const char* job = std::getenv("HOROVOD_JOB_ID");
  if (job == nullptr || *job == '\0') return "";
  std::string out;
  for (const char* p = job; *p != '\0' && out.size() < 64; ++p) {
    char ch = *p;
    bool safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    out += safe ? ch : '_';
  }
  return out;
}

}  // namespace

std::string name_prefix() {
  std::string job = job_part();
  std::string pid = std::to_string(getpid());
  return job.empty() ? "/hvd-p" + pid : "/hvd-" + job + "-" + pid;
}

std::string next_name(char kind) {
  return name_prefix() + "-" + kind + std::to_string(g_counter.fetch_add(1));
}

uint64_t next_memory_id() { return g_counter.fetch_add(1); }

std::string memory_segment_name(const std::string& prefix, uint64_t id) {
  return prefix + "-m" + std::to_string(id);
}

const std::string& boot_id() {
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string text;
    std::getline(in, text);
    return text;
  }();
  return id;
}

}  // namespace hvd_shm
