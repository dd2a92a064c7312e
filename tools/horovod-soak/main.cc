// horovod-soak: many steps of a training-shaped job through the public C
// API (200 named tensors from 1 KiB to 4 MiB, enqueued in reverse as a
// backward pass produces them, so they fuse and come from the response
// cache after the first step), watching what each rank holds: resident
// memory, open descriptors, threads and the job's /dev/shm segments.
//
//   horovodrun -np 4 horovod-soak --steps 10000
//   horovodrun -np 2 horovod-soak --steps 300 --warmup 100 --check
//
// Each rank prints its figures after warm-up, every --report-every steps,
// and at the end, then the growth; --check fails the run when something
// grew beyond the margins. Results are checked every report.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "horovod/horovod.h"
#include "process_usage.h"
#include "training_step.h"

using hvd_soak::ProcessUsage;

namespace {

struct Options {
  long steps = 10000;
  long warmup = 100;
  long report_every = 0;  // 0: only after warm-up and at the end
  int tensors = 200;
  int64_t min_bytes = 1 << 10;
  int64_t max_bytes = 4 << 20;
  bool check = false;
  double rss_margin_mib = 8.0;
};

const char* kUsage =
    "usage: horovod-soak [options]   (launch it on every rank: horovodrun)\n"
    "  --steps N          steps to run (default 10000)\n"
    "  --warmup N         steps before the first figures (default 100)\n"
    "  --report-every N   also print the figures every N steps\n"
    "  --tensors N        tensors per step (default 200)\n"
    "  --min-bytes SIZE   smallest tensor (default 1K; K, M suffixes)\n"
    "  --max-bytes SIZE   largest tensor (default 4M)\n"
    "  --check            fail when, after warm-up, resident memory grew by\n"
    "                     more than --rss-margin-mib or descriptors, threads\n"
    "                     or /dev/shm grew at all\n"
    "  --rss-margin-mib X resident memory growth allowed (default 8)\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "horovod-soak: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

int64_t parse_size(const char* text, const char* flag) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  double scale = 1;
  if (*end == 'K' || *end == 'k') scale = 1 << 10, ++end;
  else if (*end == 'M' || *end == 'm') scale = 1 << 20, ++end;
  if (end == text || *end || value <= 0) {
    usage_error(std::string(flag) + ": not a size: " + text);
  }
  return static_cast<int64_t>(value * scale);
}

long parse_count(const char* text, const char* flag, long min) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end || value < min) {
    usage_error(std::string(flag) + ": expected a whole number of at least " +
                std::to_string(min) + ", got " + text);
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg == "--check") {
      o.check = true;
      continue;
    }
    if (i + 1 >= argc) usage_error(arg + " needs a value");
    const char* v = argv[++i];
    if (arg == "--steps") o.steps = parse_count(v, "--steps", 1);
    else if (arg == "--warmup") o.warmup = parse_count(v, "--warmup", 1);
    else if (arg == "--report-every")
      o.report_every = parse_count(v, "--report-every", 1);
    else if (arg == "--tensors")
      o.tensors = static_cast<int>(parse_count(v, "--tensors", 1));
    else if (arg == "--min-bytes") o.min_bytes = parse_size(v, "--min-bytes");
    else if (arg == "--max-bytes") o.max_bytes = parse_size(v, "--max-bytes");
    else if (arg == "--rss-margin-mib") o.rss_margin_mib = std::atof(v);
    else usage_error("unknown option " + arg);
  }
  if (o.warmup >= o.steps) usage_error("--warmup must be below --steps");
  if (o.min_bytes > o.max_bytes) usage_error("--min-bytes above --max-bytes");
  return o;
}

// After a step every element holds the ranks' average of rank + 1.
bool holds_average(hvd_step::TrainingStep& step, int rank, int size) {
  const float want = (size + 1) / 2.0f;
  for (size_t k = 0; k < step.data().size(); ++k) {
    const std::vector<float>& d = step.data()[k];
    if (d.front() != want || d.back() != want) {
      std::printf("rank %d: FAIL: %s holds %g, expected %g\n", rank,
                  step.tensors()[k].name.c_str(), double(d.front()),
                  double(want));
      return false;
    }
  }
  return true;
}

std::string shm_prefix() {
  const char* job = getenv("HOROVOD_JOB_ID");
  return job && *job ? std::string("hvd-") + job + "-" : "hvd-";
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  hvd_init_options init{};
  init.struct_size = sizeof init;
  if (hvd_init(&init) != HVD_OK) {
    std::fprintf(stderr, "horovod-soak: hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  const int rank = hvd_rank(), size = hvd_size();
  hvd_step::TrainingStep step(
      hvd_step::backward_pass(o.tensors, o.min_bytes, o.max_bytes),
      HVD_OP_AVERAGE, rank);
  for (std::vector<float>& d : step.data()) d.assign(d.size(), float(rank + 1));
  if (rank == 0) {
    std::printf(
        "horovod-soak: %ld steps on %d ranks, %d tensors (%.1f MiB "
        "per step), figures after %ld steps of warm-up\n",
        o.steps, size, o.tensors, step.bytes() / 1048576.0, o.warmup);
  }
  std::fflush(stdout);
  const std::string prefix = shm_prefix();
  ProcessUsage first;
  bool ok = true;
  const auto started = std::chrono::steady_clock::now();
  for (long s = 1; s <= o.steps && ok; ++s) {
    const hvd_step::StepResult result = step.run(120000);
    if (!result.ok())
      std::printf("rank %d: FAIL: %s\n", rank, result.message.c_str());
    ok = result.ok();
    const bool report = s == o.warmup || s == o.steps ||
                        (o.report_every && s % o.report_every == 0);
    if (!ok || !report) continue;
    ok = holds_average(step, rank, size);
    const ProcessUsage now = hvd_soak::read_usage(prefix);
    if (s == o.warmup) first = now;
    const double seconds = std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - started)
                               .count();
    std::printf("rank %d: step %ld (%.0f s): %s\n", rank, s, seconds,
                hvd_soak::describe(now).c_str());
    std::fflush(stdout);
    if (s != o.steps) continue;
    const double rss_growth = (now.rss_kib - first.rss_kib) / 1024.0;
    std::printf(
        "rank %d: growth from step %ld to %ld: rss %+.1f MiB, fds "
        "%+lld, threads %+lld, /dev/shm %+.1f MiB mapped, %+lld "
        "files\n",
        rank, o.warmup, s, rss_growth,
        static_cast<long long>(now.fds - first.fds),
        static_cast<long long>(now.threads - first.threads),
        (now.shm_mapped_kib - first.shm_mapped_kib) / 1024.0,
        static_cast<long long>(now.shm_files - first.shm_files));
    if (o.check) {
      const bool grew = rss_growth > o.rss_margin_mib || now.fds > first.fds ||
                        now.threads > first.threads ||
                        now.shm_mapped_kib > first.shm_mapped_kib ||
                        now.shm_files > first.shm_files;
      if (grew) {
        std::printf(
            "rank %d: FAIL: grew beyond the margins (rss %.1f MiB, "
            "nothing else)\n",
            rank, o.rss_margin_mib);
        ok = false;
      }
    }
  }
  hvd_shutdown();
  return ok ? 0 : 1;
}
