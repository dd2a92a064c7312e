#include "process_usage.h"

#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

namespace hvd_soak {
namespace {

int64_t status_field(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const size_t n = strlen(key);
  while (std::getline(status, line)) {
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') {
      return std::stoll(line.substr(n + 1));
    }
  }
  return -1;
}

int64_t count_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int64_t n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;  // the descriptor opendir itself holds
}

}  // namespace

ProcessUsage read_usage(const std::string& shm_prefix) {
  ProcessUsage u;
  u.rss_kib = status_field("VmRSS");
  u.threads = status_field("Threads");
  u.fds = count_entries("/proc/self/fd");
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> segments;
  std::string line;
  while (std::getline(maps, line)) {
    const size_t at = line.find(" /dev/shm/");
    if (at == std::string::npos) continue;
    unsigned long long start = 0, end = 0;
    if (sscanf(line.c_str(), "%llx-%llx", &start, &end) != 2) continue;
    u.shm_mapped_kib += static_cast<int64_t>((end - start) / 1024);
    segments.insert(line.substr(at + 1));
  }
  u.shm_segments = static_cast<int64_t>(segments.size());
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (strncmp(e->d_name, shm_prefix.c_str(), shm_prefix.size()) == 0) {
        ++u.shm_files;
      }
    }
    closedir(d);
  }
  return u;
}

std::string describe(const ProcessUsage& u) {
  char text[200];
  snprintf(text, sizeof text,
           "rss %.1f MiB, fds %lld, threads %lld, /dev/shm %.1f MiB mapped in "
           "%lld segments, %lld files",
           u.rss_kib / 1024.0, static_cast<long long>(u.fds),
           static_cast<long long>(u.threads), u.shm_mapped_kib / 1024.0,
           static_cast<long long>(u.shm_segments),
           static_cast<long long>(u.shm_files));
  return text;
}

}  // namespace hvd_soak
