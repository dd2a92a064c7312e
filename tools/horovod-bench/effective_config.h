// The horovod.toml a run uses: the file given with --config (or the one the
// usual search finds), with --transport-intra, --transport-inter and
// --reducer applied. Without those flags it is the file itself; with them,
// the file is checked as it is (so its errors name it), then a copy with the
// flags applied is written to a private temporary file (in the
// job's /tmp/hvd-<job id>/ under horovodrun), removed again when
// this object goes. Every rank writes the same text, so the ranks' digests
// agree. --transport-inter also clears HOROVOD_CPU_OPERATIONS, which
// would override the file.
#pragma once

#include <string>

#include "options.h"

namespace hvd_bench {

class EffectiveConfig {
 public:
  // Throws hvd::Error (HVD_ERR_CONFIG) for a bad file, or HVD_ERR_SYSTEM
  // when the copy cannot be written.
  explicit EffectiveConfig(const Options& options);
  ~EffectiveConfig();
  EffectiveConfig(const EffectiveConfig&) = delete;
  EffectiveConfig& operator=(const EffectiveConfig&) = delete;

  // The file to load; "" means the usual search (it found nothing).
  const std::string& path() const { return path_; }
  // For the table's header: "FILE", "built-in defaults", plus the flags.
  const std::string& origin() const { return origin_; }
  // Removes the temporary copy now (for an exit that skips destructors).
  void remove();

 private:
  std::string path_, origin_, temporary_;
};

}  // namespace hvd_bench
