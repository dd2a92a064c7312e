// What horovod-info reports: the build, the configuration with the source of
// every value, the plugins on the search path, and the plugins the
// configuration selects with whether each loads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "plugin/loader.h"

namespace hvd::info {

// One name the configuration asks for, tried through the loader.
struct Candidate {
  std::string name;
  bool loads = false;
  std::string path, version;  // when it loads
  std::string error;          // when it does not
};

// A role the configuration fills: "transport.intra" (a list of fallbacks,
// the first that loads is used) or "reducer.load" (every one is loaded).
struct Selection {
  std::string role;
  std::string source;  // where the configuration set the role
  bool fallbacks = false;
  std::vector<Candidate> candidates;
  // The candidate used: for fallbacks the first that loads, else -1.
  int chosen() const;
};

struct Report {
  std::string version;
  uint32_t abi_major = 0, abi_minor = 0;
  std::string config_file;
  std::vector<std::string> config_searched;
  std::string digest;
  std::vector<Config::Entry> entries;
  std::vector<std::string> search_path;
  std::vector<PluginLoader::Found> plugins;
  // Plugin path -> what the plugin says it sees of its library and fabric
  // (hvd_plugin_info), for those that say.
  std::map<std::string, std::string> details;
  std::vector<Selection> selections;
};

Report build_report(const Config& config);

}  // namespace hvd::info
