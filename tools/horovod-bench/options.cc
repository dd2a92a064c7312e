#include "options.h"

#include <getopt.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace hvd_bench {
namespace {

struct Named {
  const char* name;
  int32_t value;
};

const Named kCollectives[] = {
    {"allreduce", HVD_COLL_ALLREDUCE},
    {"allgather", HVD_COLL_ALLGATHER},
    {"broadcast", HVD_COLL_BROADCAST},
    {"alltoall", HVD_COLL_ALLTOALL},
    {"reducescatter", HVD_COLL_REDUCESCATTER},
};

const Named kDtypes[] = {
    {"float32", HVD_FLOAT32}, {"float64", HVD_FLOAT64},
    {"float16", HVD_FLOAT16}, {"bfloat16", HVD_BFLOAT16},
    {"int32", HVD_INT32},     {"int64", HVD_INT64},
};

template <size_t N>
int32_t lookup(const Named (&table)[N], const std::string& text,
               const char* flag) {
  std::string choices;
  for (const Named& entry : table) {
    if (text == entry.name) return entry.value;
    choices += (choices.empty() ? "" : "|") + std::string(entry.name);
  }
  throw std::invalid_argument(std::string(flag) + ": unknown value '" + text +
                              "' (expected " + choices + ")");
}

uint64_t size_flag(const char* flag, const char* text) {
  uint64_t bytes = 0;
  if (!parse_size(text, &bytes)) {
    throw std::invalid_argument(std::string(flag) + ": '" + text +
                                "' is not a size (e.g. 4, 64K, 1M, 2G)");
  }
  return bytes;
}

long number_flag(const char* flag, const char* text, long min) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno != 0 || value < min) {
    throw std::invalid_argument(
        std::string(flag) + ": '" + text +
        "' is not an integer >= " + std::to_string(min));
  }
  return value;
}

enum LongOnly {
  kLayer = 256,
  kConfig,
  kTransportIntra,
  kTransportInter,
  kReducer,
  kPeer,
  kCsv,
  kTimeout,
  kSweep,
  kPlot,
  kStep,
};

const option kLongOptions[] = {
    {"collective", required_argument, nullptr, 'c'},
    {"min-bytes", required_argument, nullptr, 'b'},
    {"max-bytes", required_argument, nullptr, 'e'},
    {"step-factor", required_argument, nullptr, 'f'},
    {"iters", required_argument, nullptr, 'n'},
    {"warmup", required_argument, nullptr, 'w'},
    {"dtype", required_argument, nullptr, 'd'},
    {"layer", required_argument, nullptr, kLayer},
    {"config", required_argument, nullptr, kConfig},
    {"transport-intra", required_argument, nullptr, kTransportIntra},
    {"transport-inter", required_argument, nullptr, kTransportInter},
    {"reducer", required_argument, nullptr, kReducer},
    {"peer", required_argument, nullptr, kPeer},
    {"csv", no_argument, nullptr, kCsv},
    {"timeout", required_argument, nullptr, kTimeout},
    {"sweep", no_argument, nullptr, kSweep},
    {"plot", required_argument, nullptr, kPlot},
    {"step", required_argument, nullptr, kStep},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

}  // namespace

bool parse_size(const std::string& text, uint64_t* out) {
  size_t at = 0;
  uint64_t value = 0;
  while (at < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[at]))) {
    uint64_t digit = static_cast<uint64_t>(text[at] - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
    ++at;
  }
  if (at == 0) return false;
  std::string unit = text.substr(at);
  for (char& c : unit)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  uint64_t scale = 1;
  if (!unit.empty() && (unit[0] == 'K' || unit[0] == 'M' || unit[0] == 'G')) {
    scale = unit[0] == 'K'   ? 1ull << 10
            : unit[0] == 'M' ? 1ull << 20
                             : 1ull << 30;
    unit.erase(0, 1);
    if (unit == "IB" || unit == "B") unit.clear();
  } else if (unit == "B") {
    unit.clear();
  }
  if (!unit.empty() || value > UINT64_MAX / scale) return false;
  *out = value * scale;
  return true;
}

const char* collective_name(hvd_collective collective) {
  for (const Named& entry : kCollectives) {
    if (entry.value == collective) return entry.name;
  }
  return "?";
}

const char* layer_name(LayerKind layer) {
  return layer == LayerKind::kCollective ? "collective" : "runtime";
}

Options parse_options(int argc, char** argv) {
  Options o;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":c:b:e:f:n:w:d:h", kLongOptions,
                          nullptr)) != -1) {
    switch (c) {
      case 'c':
        o.collective = lookup(kCollectives, optarg, "--collective");
        break;
      case 'b':
        o.min_bytes = size_flag("--min-bytes", optarg);
        break;
      case 'e':
        o.max_bytes = size_flag("--max-bytes", optarg);
        break;
      case 'f':
        o.step_factor =
            static_cast<uint64_t>(number_flag("--step-factor", optarg, 2));
        break;
      case 'n':
        o.iters = static_cast<int>(number_flag("--iters", optarg, 1));
        break;
      case 'w':
        o.warmup = static_cast<int>(number_flag("--warmup", optarg, 0));
        break;
      case 'd':
        o.dtype = lookup(kDtypes, optarg, "--dtype");
        break;
      case kLayer: {
        std::string layer = optarg;
        if (layer == "collective") {
          o.layer = LayerKind::kCollective;
        } else if (layer == "runtime") {
          o.layer = LayerKind::kRuntime;
        } else {
          throw std::invalid_argument("--layer: unknown value '" + layer +
                                      "' (expected collective|runtime)");
        }
        break;
      }
      case kConfig:
        o.config_path = optarg;
        break;
      case kTransportIntra:
        o.transport_intra = optarg;
        break;
      case kTransportInter:
        o.transport_inter = optarg;
        break;
      case kReducer:
        o.reducer = optarg;
        break;
      case kPeer:
        if (std::string(optarg) != "mpi" && std::string(optarg) != "mpi-nb" &&
            std::string(optarg) != "gloo") {
          throw std::invalid_argument(std::string("--peer: unknown value '") +
                                      optarg + "' (expected mpi|mpi-nb|gloo)");
        }
        o.peer = optarg;
        break;
      case kSweep:
        o.sweep = true;
        break;
      case kPlot:
        o.plot_path = optarg;
        if (o.plot_path.empty())
          throw std::invalid_argument("--plot needs a file name");
        break;
      case kCsv:
        o.csv = true;
        break;
      case kTimeout:
        o.op_timeout =
            std::chrono::seconds(number_flag("--timeout", optarg, 1));
        break;
      case kStep:
        o.step = optarg;
        break;
      case 'h':
        o.help = true;
        break;
      case ':':
        throw std::invalid_argument(std::string("option ") + argv[optind - 1] +
                                    " needs a value");
      default:
        throw std::invalid_argument(std::string("unknown option ") +
                                    argv[optind - 1]);
    }
  }
  if (optind < argc) {
    throw std::invalid_argument(std::string("unexpected argument '") +
                                argv[optind] + "'");
  }
  if (!o.step.empty() && o.layer != LayerKind::kRuntime) {
    throw std::invalid_argument("--step needs --layer runtime");
  }
  if (o.min_bytes > o.max_bytes) {
    throw std::invalid_argument("--min-bytes (" + std::to_string(o.min_bytes) +
                                ") is above --max-bytes (" +
                                std::to_string(o.max_bytes) + ")");
  }
  if (o.sweep && !o.reducer.empty()) {
    throw std::invalid_argument("--sweep runs every reducer; drop --reducer");
  }
  if (o.sweep && o.layer != LayerKind::kCollective) {
    throw std::invalid_argument("--sweep needs --layer collective");
  }
  return o;
}

std::string usage_text() {
  return R"(usage: horovod-bench [options]
Times one collective over a range of message sizes, nccl-tests style.
Launch it on every rank: horovodrun -np N horovod-bench ..., or
mpirun -np N horovod-bench ... (needed for --peer mpi).

  -c, --collective NAME   allreduce|allgather|broadcast|alltoall|reducescatter
                          (default allreduce)
  -b, --min-bytes SIZE    smallest message (default 4); K, M, G suffixes
  -e, --max-bytes SIZE    largest message (default 256M)
  -f, --step-factor N     multiply the size by N each step (default 2)
  -n, --iters N           timed iterations per size (default 20)
  -w, --warmup N          untimed iterations first (default 5)
  -d, --dtype NAME        float32|float64|float16|bfloat16|int32|int64
                          (default float32)
      --layer NAME        collective: a reducer task on the point-to-point
                          mesh, no negotiation (default); runtime: hvd_enqueue
                          through the background thread
      --config FILE       horovod.toml (default: HOROVOD_CONFIG,
                          ./horovod.toml, the user and system locations)
      --transport-intra NAME, --transport-inter NAME
                          override transport.intra / transport.inter
      --reducer NAME      use this reducer for every size
      --peer mpi          also time Open MPI's collective on the same sizes
                          and print our/MPI ratios (launch with mpirun)
      --peer mpi-nb       the same with MPI's non-blocking collectives
                          (MPI_Iallreduce ... + MPI_Test), as the mpi
                          transport must call them
      --peer gloo         also time Gloo's allreduce (ring, its tcp
                          transport) on the same sizes, with ratios
      --sweep             time every installed reducer at every size (one
                          row each), then print the best per size, the
                          crossover points and the rules they suggest
      --plot FILE.png     draw bus bandwidth against size, one line per
                          reducer and peer (needs python3 with matplotlib)
      --csv               print CSV (one header line)
      --timeout SECONDS   fail when one collective takes longer (default 60)
      --step NAME         with --layer runtime: time whole steps instead of
                          one collective: training (200 tensors, 1 KiB to
                          4 MiB, reverse order), names100 (100 tensors of
                          4 B), small (256 x 4 KiB), large (4 x 32 MiB)
  -h, --help              this text

Size is the buffer nccl-tests reports: allgather's output, alltoall's and
reducescatter's input. Time is the median over --iters of the slowest
rank's time per iteration (min also shown). algbw = size / time;
busbw = algbw * 2(n-1)/n (allreduce), (n-1)/n (allgather, reducescatter,
alltoall), 1 (broadcast). Results are verified once per size before timing.
)";
}

}  // namespace hvd_bench
