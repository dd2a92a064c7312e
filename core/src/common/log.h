// The core's logger: one line per message to stderr, prefixed with the
// level, the rank (once known) and, for plugins, the plugin's name.
//
//   HVD_LOG(INFO) << "transport " << name << " loaded from " << path;
//
// The level comes from [log] level / HOROVOD_LOG_LEVEL; set_log_level() is
// called once the configuration is read.
#pragma once

#include <sstream>
#include <string>

#include "horovod/abi.h"

namespace hvd {

void set_log_level(hvd_log_level level);
hvd_log_level log_level();
bool log_enabled(hvd_log_level level);
void set_log_rank(int rank);
void set_log_hide_time(bool hide);
// Parses "trace", "debug", "info", "warning", "error", "fatal"
// (case-insensitive); false if unknown.
bool parse_log_level(const std::string& text, hvd_log_level* out);
void log_line(hvd_log_level level, const std::string& origin,
              const std::string& message);

class LogMessage {
 public:
  LogMessage(hvd_log_level level, std::string origin = "")
      : level_(level), origin_(std::move(origin)) {}
  ~LogMessage() { log_line(level_, origin_, stream_.str()); }
  std::ostream& stream() { return stream_; }

 private:
  hvd_log_level level_;
  std::string origin_;
  std::ostringstream stream_;
};

}  // namespace hvd

#define HVD_LOG(level)                        \
  if (!::hvd::log_enabled(HVD_LOG_##level)) { \
  } else                                      \
    ::hvd::LogMessage(HVD_LOG_##level).stream()
