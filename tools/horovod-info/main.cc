// horovod-info: how this Horovod is built and configured. Lists the plugins
// on the search path, the plugins the configuration selects and whether they
// load, and the effective configuration with where each value came from.
// `horovodrun --check-build` prints this.
//
// Exit status: 0; 1 when the configuration is invalid; 2 on a usage error;
// 3 on any other failure.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "common/error.h"
#include "config/config.h"
#include "output.h"
#include "plan.h"
#include "report.h"

namespace {

const char* kUsage =
    "Usage: horovod-info [--config FILE] [--json]\n"
    "       horovod-info --defaults\n"
    "       horovod-info --plan [--size N] [--hosts H | --layout A,B,...]\n"
    "                    [--config FILE]\n"
    "\n"
    "Shows how this Horovod is built and configured: the plugins on the\n"
    "search path (kind, name, ABI version, version, path, or why one fails\n"
    "to load), the plugins the configuration selects and whether each loads,\n"
    "and the effective configuration with where each value came from\n"
    "(default, FILE:LINE:COLUMN, or an environment variable).\n"
    "\n"
    "  --config FILE  read FILE instead of searching for horovod.toml\n"
    "                 ($HOROVOD_CONFIG, ./horovod.toml, ~/.config/horovod/,\n"
    "                 /etc/horovod/)\n"
    "  --json         machine-readable output\n"
    "  --defaults     print a documented horovod.toml holding every default\n"
    "  --plan         which reducer runs each collective, by message size,\n"
    "                 for a team of --size N ranks (default 2) on --hosts H\n"
    "                 hosts (default 1; ranks split evenly) or --layout\n"
    "                 A,B,... (ranks per host), from the reducers\n"
    "                 reducer.load names, their scores and the rules\n"
    "  --help         this text\n"
    "\n"
    "Exit status: 0; 1 when the configuration is invalid; 2 on a usage\n"
    "error; 3 on any other failure.\n";

struct Options {
  std::string config;
  bool json = false;
  bool defaults = false;
  bool help = false;
  bool plan = false;
  int32_t size = 0;   // 0: from the layout, else 2
  int32_t hosts = 0;  // 0: one
  std::string layout;
};

// A positive count for `flag`; false with the reason in `error`.
bool parse_count(const std::string& flag, const std::string& text, int32_t* out,
                 std::string* error) {
  char* end = nullptr;
  long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < 1 || n > 1 << 20) {
    *error = flag + " needs a positive number, not '" + text + "'";
    return false;
  }
  *out = static_cast<int32_t>(n);
  return true;
}

// Returns "" or what is wrong with the command line.
std::string parse(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options->help = true;
    } else if (arg == "--json") {
      options->json = true;
    } else if (arg == "--defaults") {
      options->defaults = true;
    } else if (arg == "--plan") {
      options->plan = true;
    } else if (arg == "--size" || arg == "--hosts" || arg == "--layout") {
      if (i + 1 == argc) return arg + " needs a value";
      std::string value = argv[++i], error;
      if (arg == "--layout") {
        options->layout = value;
      } else if (!parse_count(
                     arg, value,
                     arg == "--size" ? &options->size : &options->hosts,
                     &error)) {
        return error;
      }
    } else if (arg == "--config") {
      if (i + 1 == argc) return "--config needs a file";
      options->config = argv[++i];
    } else if (arg.rfind("--config=", 0) == 0) {
      options->config = arg.substr(strlen("--config="));
      if (options->config.empty()) return "--config needs a file";
    } else {
      return "unknown option '" + arg + "'";
    }
  }
  if (!options->plan &&
      (options->size || options->hosts || !options->layout.empty())) {
    return "--size, --hosts and --layout go with --plan";
  }
  if (options->hosts && !options->layout.empty()) {
    return "--hosts and --layout exclude each other";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string usage_error = parse(argc, argv, &options);
  if (!usage_error.empty()) {
    std::cerr << "horovod-info: " << usage_error << "\n\n" << kUsage;
    return 2;
  }
  if (options.help) {
    std::cout << kUsage;
    return 0;
  }
  if (options.defaults) {
    std::cout << hvd::default_config_text();
    return 0;
  }

  try {
    hvd::ConfigLoadOptions load;
    load.path = options.config;
    hvd::Config config = hvd::Config::load(load);
    if (options.plan) {
      hvd::info::PlanLayout layout;
      if (!options.layout.empty()) {
        layout = hvd::info::parse_layout(options.layout);
        if (options.size && options.size != layout.size()) {
          throw hvd::Error(HVD_ERR_INVALID_ARGUMENT,
                           "--size " + std::to_string(options.size) +
                               " but --layout " + options.layout + " holds " +
                               std::to_string(layout.size()) + " rank(s)");
        }
      } else {
        layout = hvd::info::even_layout(options.size ? options.size : 2,
                                        options.hosts ? options.hosts : 1);
      }
      hvd::info::print_plan_text(hvd::info::build_plan(config, layout),
                                 std::cout);
      return 0;
    }
    hvd::info::Report report = hvd::info::build_report(config);
    if (options.json)
      hvd::info::print_json(report, std::cout);
    else
      hvd::info::print_text(report, std::cout);
    return 0;
  } catch (const hvd::Error& e) {
    if (options.json) hvd::info::print_json_error(e.what(), std::cout);
    std::cerr << "horovod-info: " << e.what() << "\n";
    if (e.status() == HVD_ERR_INVALID_ARGUMENT && options.plan) {
      return 2;
    }
    return e.status() == HVD_ERR_CONFIG ? 1 : 3;
  }
}
