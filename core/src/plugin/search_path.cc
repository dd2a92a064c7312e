// Where plugins are looked for when nothing else is said: the install this
// code belongs to, found from the binary holding it, so the build tree, an
// installed prefix and a copied prefix all work without any variable.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "plugin/loader.h"

namespace hvd {
namespace {

namespace fs = std::filesystem;

// The file holding this function: libhorovod.so, or the executable a static
// copy of the core is linked into.
fs::path binary_of_this_code() {
  Dl_info info;
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&binary_of_this_code), &info,
              reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0 &&
      map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    return map->l_name;
  }
  // The main program has no name in the link map (dladdr would give
  // argv[0], which may be a bare command name found through PATH).
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : self;
}

std::vector<std::string> install_plugin_dirs() {
  fs::path binary = binary_of_this_code();
  if (binary.empty()) return {};
  std::error_code error;
  fs::path dir = fs::weakly_canonical(fs::absolute(binary, error), error);
  if (error) return {};
  dir = dir.parent_path();
  // <p>/bin/x -> <p>/<libdir>/horovod; <p>/<libdir>/libhorovod.so ->
  // <p>/<libdir>/horovod. That folder is always listed, so a failure names
  // it; the other layouts that mirror the install tree only when they exist.
  const fs::path primary =
      dir.filename() == HVD_INSTALL_BINDIR
          ? dir.parent_path() / HVD_INSTALL_LIBDIR / "horovod"
          : dir / "horovod";
  std::vector<std::string> dirs = {primary.lexically_normal().string()};
  const fs::path others[] = {
      dir / "horovod",
      dir.parent_path() / HVD_INSTALL_LIBDIR / "horovod",
      dir.parent_path() / "lib" / "horovod",
  };
  for (const fs::path& other : others) {
    fs::path normal = other.lexically_normal();
    if (normal != primary.lexically_normal() &&
        fs::is_directory(normal, error)) {
      dirs.push_back(normal.string());
    }
  }
  return dirs;
}

void append_unique(std::vector<std::string>& list, const std::string& entry) {
  if (entry.empty()) return;
  for (const std::string& existing : list) {
    if (existing == entry) return;
  }
  list.push_back(entry);
}

}  // namespace

std::vector<std::string> PluginLoader::default_search_path(
    const std::vector<std::string>& configured) {
  std::vector<std::string> path;
  for (const std::string& dir : configured) append_unique(path, dir);
  if (const char* env = std::getenv("HOROVOD_PLUGIN_PATH")) {
    std::string text = env;
    size_t start = 0;
    while (start <= text.size()) {
      size_t colon = text.find(':', start);
      if (colon == std::string::npos) colon = text.size();
      append_unique(path, text.substr(start, colon - start));
      start = colon + 1;
    }
  }
  for (const std::string& dir : install_plugin_dirs()) append_unique(path, dir);
  return path;
}

}  // namespace hvd
