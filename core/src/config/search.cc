#include "config/search.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace hvd {
namespace {

std::string env_value(const Environment& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void require(const std::string& path, const std::string& named_by) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    throw Error(HVD_ERR_CONFIG, named_by + path +
                                    ": cannot read the "
                                    "configuration file: " +
                                    strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    throw Error(HVD_ERR_CONFIG,
                named_by + path + ": is a folder, not a configuration file");
  }
}

}  // namespace

ConfigLocation locate_config(const ConfigLoadOptions& options,
                             const Environment& env) {
  ConfigLocation location;
  if (!options.path.empty()) {
    location.searched.push_back(options.path);
    require(options.path, "");
    location.path = options.path;
    return location;
  }
  std::string from_env = env_value(env, "HOROVOD_CONFIG");
  if (!from_env.empty()) {
    location.searched.push_back(from_env);
    require(from_env, "HOROVOD_CONFIG=");
    location.path = from_env;
    return location;
  }

  std::vector<std::string> candidates;
  candidates.push_back(options.working_directory.empty()
                           ? "./horovod.toml"
                           : options.working_directory + "/horovod.toml");
  std::string xdg = env_value(env, "XDG_CONFIG_HOME");
  std::string home = env_value(env, "HOME");
  if (!xdg.empty())
    candidates.push_back(xdg + "/horovod/horovod.toml");
  else if (!home.empty())
    candidates.push_back(home + "/.config/horovod/horovod.toml");
  candidates.push_back((options.system_directory.empty()
                            ? std::string("/etc/horovod")
                            : options.system_directory) +
                       "/horovod.toml");

  for (const std::string& candidate : candidates) {
    location.searched.push_back(candidate);
    if (exists(candidate)) {
      require(candidate, "");
      location.path = candidate;
      break;
    }
  }
  return location;
}

std::string read_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(HVD_ERR_CONFIG, path +
                                    ": cannot read the configuration "
                                    "file: " +
                                    strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    throw Error(HVD_ERR_CONFIG,
                path + ": cannot read the configuration file: read error");
  }
  return text.str();
}

}  // namespace hvd
