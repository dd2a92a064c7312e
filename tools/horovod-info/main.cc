// horovod-info: how this Horovod is built and configured. Lists the plugins
// on the search path, the plugins the configuration selects and whether they
// load, and the effective configuration with where each value came from.
// `horovodrun --check-build` prints this.
//
// Exit status: 0; 1 when the configuration is invalid; 2 on a usage error;
// 3 on any other failure.
#include <cstring>
#include <iostream>
#include <string>

#include "common/error.h"
#include "config/config.h"
#include "output.h"
#include "report.h"

namespace {

const char* kUsage =
    "Usage: horovod-info [--config FILE] [--json]\n"
    "       horovod-info --defaults\n"
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
    "  --help         this text\n"
    "\n"
    "Exit status: 0; 1 when the configuration is invalid; 2 on a usage\n"
    "error; 3 on any other failure.\n";

struct Options {
  std::string config;
  bool json = false;
  bool defaults = false;
  bool help = false;
};

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
    hvd::info::Report report = hvd::info::build_report(config);
    if (options.json)
      hvd::info::print_json(report, std::cout);
    else
      hvd::info::print_text(report, std::cout);
    return 0;
  } catch (const hvd::Error& e) {
    if (options.json) hvd::info::print_json_error(e.what(), std::cout);
    std::cerr << "horovod-info: " << e.what() << "\n";
    return e.status() == HVD_ERR_CONFIG ? 1 : 3;
  }
}
