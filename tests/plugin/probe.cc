#include "probe.h"

#include <cstdio>

#include "common/error.h"
#include "plugin/loader.h"

extern "C" int hvd_plugin_probe(const char* name) {
  hvd::PluginLoader loader(hvd::PluginLoader::default_search_path({}));
  for (const std::string& dir : loader.search_path()) {
    std::printf("search %s\n", dir.c_str());
  }
  try {
    auto plugin = loader.load(HVD_PLUGIN_TRANSPORT, name);
    std::printf("loaded %s version %s\n", plugin->path().c_str(),
                plugin->header().version);
    return 0;
  } catch (const hvd::Error& e) {
    std::printf("error %s\n", e.what());
    return 1;
  }
}
