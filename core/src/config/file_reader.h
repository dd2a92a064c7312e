// Reads a parsed horovod.toml into a Config: the core's keys (checked
// against the schema), the plugins' tables and the reducer rules.
#pragma once

#include "config/impl.h"
#include "config/toml_api.h"

namespace hvd {

// Throws hvd::Error(HVD_ERR_CONFIG) at the first unknown key, wrong type or
// bad value, with its file, line and column.
void read_toml(const toml::table& root, Config::Impl& impl);

}  // namespace hvd
