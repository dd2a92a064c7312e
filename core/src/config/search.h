// Which horovod.toml a job reads.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "config/environment.h"

namespace hvd {

struct ConfigLocation {
  std::string path;  // "" when no file is found: defaults only
  std::vector<std::string> searched;
};

// The explicit path, else $HOROVOD_CONFIG (both must exist), else the first
// existing of ./horovod.toml, ($XDG_CONFIG_HOME or ~/.config)/horovod/
// horovod.toml and /etc/horovod/horovod.toml. Throws HVD_ERR_CONFIG when an
// explicit file is missing.
ConfigLocation locate_config(const ConfigLoadOptions& options,
                             const Environment& env);

// The file's text; throws HVD_ERR_CONFIG naming the file when unreadable.
std::string read_config_file(const std::string& path);

}  // namespace hvd
