#include "effective_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/error.h"
#include "config/config.h"
#include "config/toml_api.h"
#include "plugin/loader.h"

namespace hvd_bench {
namespace {

const char* const kRuledCollectives[] = {"allreduce", "allgather", "broadcast",
                                         "alltoall", "reducescatter"};

toml::table& subtable(toml::table& root, const char* key) {
  toml::node* node = root.get(key);
  if (!node || !node->is_table()) {
    root.insert_or_assign(key, toml::table{});
    node = root.get(key);
  }
  return *node->as_table();
}

// Under horovodrun, the job's own folder, which the launcher removes even
// when a rank is killed; else $TMPDIR or /tmp.
std::string temporary_folder() {
  const char* job = std::getenv("HOROVOD_JOB_ID");
  bool safe = job && *job;
  for (const char* c = job; safe && *c; ++c) {
    safe = std::isalnum(static_cast<unsigned char>(*c)) || *c == '_' ||
           *c == '-' || *c == '.';
  }
  if (safe) {
    std::string folder = std::string("/tmp/hvd-") + job;
    if (mkdir(folder.c_str(), 0700) == 0 || errno == EEXIST) return folder;
  }
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

std::string write_temporary(const std::string& text) {
  std::string pattern = temporary_folder() + "/horovod-bench-XXXXXX.toml";
  int fd = mkstemps(pattern.data(), 5);
  if (fd < 0) {
    throw hvd::Error(HVD_ERR_SYSTEM,
                     "cannot create " + pattern + ": " + std::strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = errno;
      close(fd);
      unlink(pattern.c_str());
      throw hvd::Error(HVD_ERR_SYSTEM,
                       "cannot write " + pattern + ": " + std::strerror(error));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return pattern;
}

}  // namespace

EffectiveConfig::EffectiveConfig(const Options& options) {
  hvd::ConfigLoadOptions load;
  load.path = options.config_path;
  const hvd::Config base = hvd::Config::load(load);
  const std::string& file = base.file();
  origin_ = file.empty() ? "built-in defaults" : file;

  const bool overridden = !options.transport_intra.empty() ||
                          !options.transport_inter.empty() ||
                          !options.reducer.empty() || options.sweep;
  if (!overridden) {
    path_ = file;
    return;
  }

  toml::table root;
  if (!file.empty()) {
    try {
      root = toml::parse_file(file);
    } catch (const toml::parse_error& e) {
      // Config::load read it a moment ago; it changed under us.
      throw hvd::Error(HVD_ERR_CONFIG,
                       file + ": " + std::string(e.description()));
    }
  }
  std::string flags;
  if (!options.transport_intra.empty()) {
    subtable(root, "transport")
        .insert_or_assign("intra", options.transport_intra);
    flags += " --transport-intra " + options.transport_intra;
  }
  if (!options.transport_inter.empty()) {
    subtable(root, "transport")
        .insert_or_assign("inter", options.transport_inter);
    flags += " --transport-inter " + options.transport_inter;
    // The variable would override the file; the flag is meant to win.
    unsetenv("HOROVOD_CPU_OPERATIONS");
  }
  if (!options.reducer.empty()) {
    toml::array load_list;
    bool listed = false;
    for (const std::string& name : base.get_strings("reducer.load")) {
      load_list.push_back(name);
      listed = listed || name == options.reducer;
    }
    if (!listed) load_list.push_back(options.reducer);
    subtable(root, "reducer").insert_or_assign("load", load_list);
    for (const char* collective : kRuledCollectives) {
      toml::table rule;
      rule.insert_or_assign("reducer", options.reducer);
      toml::array rules;
      rules.push_back(rule);
      toml::table section;
      section.insert_or_assign("rules", rules);
      root.insert_or_assign(collective, section);
    }
    flags += " --reducer " + options.reducer;
  }
  if (options.sweep) {
    // Every reducer installed on the search path that loads, once each.
    hvd::PluginLoader loader(hvd::PluginLoader::default_search_path(
        base.get_strings("plugins.search_path")));
    toml::array load_list;
    std::vector<std::string> seen;
    for (const auto& found : loader.discover()) {
      if (found.kind != HVD_PLUGIN_REDUCER || !found.error.empty()) continue;
      if (std::find(seen.begin(), seen.end(), found.name) != seen.end())
        continue;
      seen.push_back(found.name);
      load_list.push_back(found.name);
    }
    if (seen.empty()) {
      throw hvd::Error(HVD_ERR_CONFIG,
                       "--sweep: no reducer plugin loads from the search "
                       "path (horovod-info lists what is there)");
    }
    subtable(root, "reducer").insert_or_assign("load", load_list);
    flags += " --sweep";
  }
  origin_ += " with" + flags;

  std::ostringstream text;
  text << "# Written by horovod-bench: " << origin_ << "\n" << root << "\n";
  temporary_ = write_temporary(text.str());
  path_ = temporary_;
  // Checked here, so a bad flag value is reported before any rank starts.
  hvd::ConfigLoadOptions check;
  check.path = path_;
  try {
    hvd::Config::load(check);
  } catch (...) {
    unlink(temporary_.c_str());
    throw;
  }
}

EffectiveConfig::~EffectiveConfig() { remove(); }

void EffectiveConfig::remove() {
  if (!temporary_.empty()) unlink(temporary_.c_str());
  temporary_.clear();
}

}  // namespace hvd_bench
