// TOML++ compiled once (toml_impl.cc) rather than in every file that parses.
#pragma once

#define TOML_HEADER_ONLY 0
#include <toml++/toml.h>
