// Reads a reducer's own table ([reducer.<name>]) against the keys it knows.
// A bad value or an unknown key goes to host->config_error (which words it
// with file, line and column) and fails init with HVD_ERR_CONFIG.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "horovod/host.h"

namespace hvd::reducers {

// A size: an integer number of bytes, or text such as "1MiB", "64 KiB",
// "4096", "1.5MB" (KiB/MiB/GiB binary, KB/MB/GB decimal).
struct SizeOption {
  const char* key;
  uint64_t* value;  // holds the default on entry
  uint64_t min, max;
};

struct IntOption {
  const char* key;
  int64_t* value;  // holds the default on entry
  int64_t min, max;
};

// Throws Failure(HVD_ERR_CONFIG) after reporting through config_error.
void read_options(const hvd_host* host, std::initializer_list<SizeOption> sizes,
                  std::initializer_list<IntOption> ints);

// The options of a pipelined reducer (ring, halving-doubling): chunk_bytes
// (64 B to 1 GiB) and pipeline_depth (1 to 64), defaults on entry.
void read_pipeline_options(const hvd_host* host, uint64_t* chunk_bytes,
                           int64_t* pipeline_depth);

// "1MiB" etc. -> bytes; false when not a size.
bool parse_size(const char* text, uint64_t* bytes);

}  // namespace hvd::reducers
