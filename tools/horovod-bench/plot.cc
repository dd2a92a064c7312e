#include "plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace hvd_bench {
namespace {

using hvd::Error;

// horovod-bench-plot next to this executable, unless HOROVOD_BENCH_PLOT
// names one.
std::string plot_script() {
  if (const char* path = std::getenv("HOROVOD_BENCH_PLOT")) {
    if (*path) return path;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "horovod-bench-plot";
  std::string dir(self, static_cast<size_t>(n));
  dir.erase(dir.rfind('/') + 1);
  return dir + "horovod-bench-plot";
}

}  // namespace

Plot::Plot(const std::string& png_path, const std::string& title)
    : png_(png_path), title_(title) {
  std::string stem = png_;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".png") == 0) {
    stem.resize(stem.size() - 4);
  }
  csv_ = stem + ".csv";
  out_ = std::fopen(csv_.c_str(), "w");
  if (!out_) {
    throw Error(HVD_ERR_SYSTEM,
                "--plot: cannot write " + csv_ + ": " + std::strerror(errno));
  }
  std::fprintf(out_, "bytes,series,time_us,busbw_gbs\n");
}

Plot::~Plot() {
  if (out_) std::fclose(out_);
}

void Plot::add(uint64_t bytes, const std::string& series, double median_s,
               double busbw_gbs) {
  std::fprintf(out_, "%llu,%s,%.3f,%.6g\n",
               static_cast<unsigned long long>(bytes), series.c_str(),
               median_s * 1e6, busbw_gbs);
}

void Plot::draw() {
  std::fclose(out_);
  out_ = nullptr;
  const std::string script = plot_script();
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    throw Error(HVD_ERR_SYSTEM,
                std::string("--plot: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    execlp("python3", "python3", script.c_str(), csv_.c_str(), png_.c_str(),
           title_.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "horovod-bench: cannot run python3 %s: %s\n",
                 script.c_str(), std::strerror(errno));
    std::_Exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw Error(HVD_ERR_SYSTEM, "--plot: python3 " + script + " " + csv_ + " " +
                                    png_ + " failed (status " +
                                    std::to_string(WEXITSTATUS(status)) +
                                    "); the results are in " + csv_);
  }
}

}  // namespace hvd_bench
