// The frame of a multi-process job's main(): hvd_init with a configuration
// file, the job's own checks, a barrier, hvd_shutdown, and the line
// "rank R: NAME: passed" (or FAILED) that the exit status agrees with.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "mp_support.h"

namespace mp {

// Prints "usage: PROGRAM ARGUMENTS"; returns main()'s status for it.
inline int usage(const std::string& program, const char* arguments) {
  std::fprintf(stderr, "usage: %s %s\n", program.c_str(), arguments);
  return 2;
}

struct JobOptions {
  // Static process sets given to hvd_init, each a list of world ranks.
  std::vector<std::vector<int32_t>> process_sets;
  // Shutting down stops the runtime on every rank: wait for all first (off
  // where the body leaves the runtime failed, or where a barrier's round
  // would count against what the job measures).
  bool barrier = true;
  // Checks to make once the runtime is shut down.
  std::function<void()> after_shutdown;
};

// One run: hvd_init with `config` (null: the defaults), `body`, the barrier,
// hvd_shutdown, the result line under `name`. Returns main()'s status: 1
// where hvd_init or any check so far failed.
inline int run_once(const std::string& name, const char* config,
                    const std::function<void()>& body,
                    const JobOptions& options = {}) {
  std::vector<const int32_t*> sets;
  std::vector<int32_t> sizes;
  for (const std::vector<int32_t>& set : options.process_sets) {
    sets.push_back(set.data());
    sizes.push_back(static_cast<int32_t>(set.size()));
  }
  hvd_init_options init{};
  init.process_sets = sets.data();
  init.process_set_sizes = sizes.data();
  init.process_set_count = static_cast<int32_t>(sets.size());
  if (!init_job(config, init)) return 1;
  body();
  if (options.barrier) run_op(bare_op(HVD_COLL_BARRIER));
  expect_ok(hvd_shutdown(), "hvd_shutdown");
  expect(!hvd_is_initialized(), "still initialised after shutdown");
  if (options.after_shutdown) options.after_shutdown();
  std::printf("rank %d: %s: %s\n", R, name.c_str(),
              g_failures ? "FAILED" : "passed");
  std::fflush(stdout);
  return g_failures ? 1 : 0;
}

// main() of a job given one configuration file, argv[1].
inline int run_job(int argc, char** argv, const std::string& name,
                   const std::function<void()>& body,
                   const JobOptions& options = {}) {
  if (argc != 2) return usage(argv[0], "CONFIG.toml");
  return run_once(name, argv[1], body, options);
}

// main() of a job given one or more configuration files: a run with each in
// turn, named `name` and the file's stem (its name less directory and
// extension), until one fails. `body` is given the stem.
inline int run_job_per_config(
    int argc, char** argv, const std::string& name,
    const std::function<void(const std::string& stem)>& body,
    const JobOptions& options = {}) {
  if (argc < 2) return usage(argv[0], "CONFIG.toml...");
  for (int a = 1; a < argc; ++a) {
    const std::string path = argv[a];
    std::string stem = path.substr(path.find_last_of('/') + 1);
    stem = stem.substr(0, stem.rfind('.'));
    if (run_once(
            name + " " + stem, argv[a], [&] { body(stem); }, options)) {
      return 1;
    }
  }
  return 0;
}

}  // namespace mp
