#define TOML_IMPLEMENTATION
#include "config/toml_api.h"
