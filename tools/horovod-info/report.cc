#include "report.h"

#include "common/error.h"
#include "horovod/abi.h"

namespace hvd::info {
namespace {

Candidate try_load(const PluginLoader& loader, int kind,
                   const std::string& name) {
  Candidate candidate;
  candidate.name = name;
  try {
    std::shared_ptr<Plugin> plugin = loader.load(kind, name);
    candidate.loads = true;
    candidate.path = plugin->path();
    if (plugin->header().version) candidate.version = plugin->header().version;
  } catch (const Error& e) {
    candidate.error = e.what();
  }
  return candidate;
}

Selection select(const PluginLoader& loader, const Config& config,
                 const std::string& role, int kind, bool fallbacks) {
  Selection selection;
  selection.role = role;
  selection.source = config.source(role);
  selection.fallbacks = fallbacks;
  for (const std::string& name : config.get_strings(role))
    selection.candidates.push_back(try_load(loader, kind, name));
  return selection;
}

// The plugin's own description (HVD_EXT_PLUGIN_INFO), "" when it has none.
std::string describe(const PluginLoader& loader,
                     const PluginLoader::Found& found) {
  try {
    std::shared_ptr<Plugin> plugin = loader.load(found.kind, found.path);
    for (const hvd_extension* e = plugin->header().ext; e; e = e->next) {
      if (e->type != HVD_EXT_PLUGIN_INFO ||
          e->struct_size < HVD_STRUCT_SIZE(hvd_plugin_info, describe)) {
        continue;
      }
      auto* info = reinterpret_cast<const hvd_plugin_info*>(e);
      const char* text = info->describe ? info->describe() : nullptr;
      return text ? text : "";
    }
  } catch (const Error&) {
  }
  return "";
}

}  // namespace

int Selection::chosen() const {
  if (!fallbacks) return -1;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].loads) return static_cast<int>(i);
  return -1;
}

Report build_report(const Config& config) {
  Report report;
  report.version = HOROVOD_VERSION;
  report.abi_major = HVD_ABI_VERSION_MAJOR;
  report.abi_minor = HVD_ABI_VERSION_MINOR;
  report.config_file = config.file();
  report.config_searched = config.searched();
  report.digest = config.digest();
  report.entries = config.entries();

  PluginLoader loader(PluginLoader::default_search_path(
      config.get_strings("plugins.search_path")));
  report.search_path = loader.search_path();
  report.plugins = loader.discover();
  for (const auto& found : report.plugins) {
    if (!found.error.empty()) continue;
    std::string text = describe(loader, found);
    if (!text.empty()) report.details[found.path] = text;
  }
  for (const char* role :
       {"transport.intra", "transport.inter", "transport.gpu"}) {
    report.selections.push_back(
        select(loader, config, role, HVD_PLUGIN_TRANSPORT, true));
  }
  report.selections.push_back(
      select(loader, config, "reducer.load", HVD_PLUGIN_REDUCER, false));
  return report;
}

}  // namespace hvd::info
