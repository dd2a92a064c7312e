#include "common/log.h"

#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

namespace hvd {
namespace {

std::atomic<int> g_level{HVD_LOG_WARNING};
std::atomic<int> g_rank{-1};
std::atomic<bool> g_hide_time{false};
std::mutex g_write_mutex;

const char* level_name(hvd_log_level level) {
  static const char* names[] = {"TRACE",   "DEBUG", "INFO",
                                "WARNING", "ERROR", "FATAL"};
  return level >= 0 && level <= HVD_LOG_FATAL ? names[level] : "?";
}

}  // namespace

void set_log_level(hvd_log_level level) { g_level = level; }
hvd_log_level log_level() { return g_level; }
bool log_enabled(hvd_log_level level) { return level >= g_level; }
void set_log_rank(int rank) { g_rank = rank; }
void set_log_hide_time(bool hide) { g_hide_time = hide; }

bool parse_log_level(const std::string& text, hvd_log_level* out) {
  static const char* names[] = {"trace",   "debug", "info",
                                "warning", "error", "fatal"};
  for (int i = 0; i <= HVD_LOG_FATAL; ++i) {
    if (strcasecmp(text.c_str(), names[i]) == 0) {
      *out = i;
      return true;
    }
  }
  return false;
}

void log_line(hvd_log_level level, const std::string& origin,
              const std::string& message) {
  char stamp[64] = "";
  if (!g_hide_time) {
    timeval tv;
    gettimeofday(&tv, nullptr);
    tm local;
    localtime_r(&tv.tv_sec, &local);
    size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
    snprintf(stamp + n, sizeof stamp - n, ".%06ld ", (long)tv.tv_usec);
  }
  std::string where = "horovod";
  if (g_rank >= 0) where += " rank " + std::to_string(g_rank.load());
  if (!origin.empty()) where += " " + origin;
  std::lock_guard<std::mutex> lock(g_write_mutex);
  fprintf(stderr, "[%s%s %s] %s\n", stamp, level_name(level), where.c_str(),
          message.c_str());
}

}  // namespace hvd
