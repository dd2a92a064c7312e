// horovod-transport-test [options] <name-or-path.so>
//
// Runs the transport conformance suite over the ranks of a job (start it
// with horovodrun -np 2 or more). The plugin is loaded by name along the
// plugin search path, or from a path. Rank 0 prints one line per case and
// "N passed, N failed"; the exit status is 1 when a case failed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "bootstrap_world.h"
#include "common/error.h"
#include "common/log.h"
#include "config/config.h"
#include "plugin/loader.h"
#include "suite.h"

namespace {

void usage(std::ostream& out) {
  out << "usage: horovod-transport-test [--case NAME]... [--max-bytes N]\n"
         "                              [--timeout SECONDS] [--silent-peers]"
         " [--bench]\n"
         "                              [--list] <name-or-path.so>\n"
         "Run under horovodrun with 2 or more ranks, e.g.\n"
         "  horovodrun -np 3 horovod-transport-test shm\n";
}

}  // namespace

int main(int argc, char** argv) {
  hvd_conformance::SuiteOptions options;
  std::string plugin;
  bool bench = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "horovod-transport-test: " << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--case") {
      options.cases.push_back(value());
    } else if (arg == "--max-bytes") {
      options.max_bytes = std::strtoull(value().c_str(), nullptr, 10);
    } else if (arg == "--timeout") {
      options.timeout_s = std::atoi(value().c_str());
    } else if (arg == "--silent-peers") {
      options.silent_peers = true;
    } else if (arg == "--bench") {
      bench = true;
    } else if (arg == "--list") {
      for (const std::string& name : hvd_conformance::case_names()) {
        std::cout << name << "\n";
      }
      return 0;
    } else if (arg == "-h" || arg == "--help") {
      usage(std::cout);
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      std::cerr << "horovod-transport-test: unknown option " << arg << "\n";
      usage(std::cerr);
      return 2;
    } else if (plugin.empty()) {
      plugin = arg;
    } else {
      usage(std::cerr);
      return 2;
    }
  }
  if (plugin.empty()) {
    usage(std::cerr);
    return 2;
  }
  try {
    hvd::Config config = hvd::Config::load();
    hvd_log_level level;
    if (hvd::parse_log_level(config.get_string("log.level"), &level)) {
      hvd::set_log_level(level);
    }
    hvd::PluginLoader loader(hvd::PluginLoader::default_search_path(
        config.get_strings("plugins.search_path")));
    std::shared_ptr<hvd::Plugin> loaded =
        loader.load(HVD_PLUGIN_TRANSPORT, plugin);
    const hvd_transport_api& api = loaded->transport();
    hvd_conformance::BootstrapWorld world(config, api.name);
    hvd::set_log_rank(world.rank());
    if (world.rank() == 0) {
      std::cout << loaded->describe() << ", " << world.size() << " ranks\n";
    }
    if (bench) {
      hvd_conformance::run_bench(world, api, std::cout);
      return 0;
    }
    int failed = hvd_conformance::run_suite(world, api, options, std::cout);
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "horovod-transport-test: " << e.what() << "\n";
    return 1;
  }
}
