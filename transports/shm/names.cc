#include "names.h"

#include <atomic>
#include <cstdint>
#include <fstream>

#include "horovod_plugin/job_files.h"

namespace hvd_shm {
namespace {

std::atomic<uint64_t> g_counter{0};

}  // namespace

std::string name_prefix() { return hvd_plugin::job_file_prefix(); }

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
