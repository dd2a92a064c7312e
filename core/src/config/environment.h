// Horovod's HOROVOD_* environment variables, each mapped onto one key of the
// schema, applied over the file.
#pragma once

#include <map>
#include <string>

#include "config/impl.h"

namespace hvd {

using Environment = std::map<std::string, std::string>;

// The process environment as a map.
Environment process_environment();

// Sets every key whose variable is set (and not empty) in `env`, with the
// variable as its source. Throws HVD_ERR_CONFIG naming the variable for a
// bad value.
void apply_environment(const Environment& env, Config::Impl& impl);

}  // namespace hvd
