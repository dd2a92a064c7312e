#include "plugin/loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace hvd {
namespace {

const char* entry_symbol(int kind) {
  switch (kind) {
    case HVD_PLUGIN_TRANSPORT:
      return HVD_TRANSPORT_ENTRY;
    case HVD_PLUGIN_REDUCER:
      return HVD_REDUCER_ENTRY;
    case HVD_PLUGIN_ADAPTER:
      return HVD_ADAPTER_ENTRY;
  }
  return nullptr;
}

int kind_from_name(const std::string& text) {
  for (int kind :
       {HVD_PLUGIN_TRANSPORT, HVD_PLUGIN_REDUCER, HVD_PLUGIN_ADAPTER}) {
    if (text == plugin_kind_name(kind)) return kind;
  }
  return 0;
}

std::string file_name(int kind, const std::string& name) {
  return std::string("libhorovod-") + plugin_kind_name(kind) + "-" + name +
         ".so";
}

// Under AddressSanitizer a plugin stays mapped after dlclose, and with it
// the libraries it pulled in: what they allocated is then reported under
// their names (and suppressible by them, tools/sanitizers/lsan.supp) and
// what they still hold stays reachable, instead of "<unknown module>".
#if defined(__SANITIZE_ADDRESS__)
constexpr int kKeepMapped = RTLD_NODELETE;
#else
constexpr int kKeepMapped = 0;
#endif

// dlerror() usually starts with the path we just gave it; say it once. A
// library the plugin links that this machine lacks (Open MPI, UCX, Gloo ...
// on a machine without them) is named as such: "not loadable: <library>
// missing".
std::string dlopen_reason(const std::string& path) {
  const char* text = dlerror();
  std::string reason = text ? text : "dlopen failed";
  const std::string prefix = path + ": ";
  if (reason.compare(0, prefix.size(), prefix) == 0) {
    reason.erase(0, prefix.size());
  }
  const std::string no_file = ": cannot open shared object file";
  size_t at = reason.find(no_file);
  if (at != std::string::npos && reason.find(": ") == at) {
    reason = "not loadable: " + reason.substr(0, at) + " missing";
  }
  return reason;
}

// The outcome of trying one file.
struct Attempt {
  bool exists = false;
  hvd_status status = HVD_OK;
  std::string reason;  // "" on success
  void* dl = nullptr;
  const hvd_plugin_header* header = nullptr;  // also set when checks failed
};

Attempt try_file(int kind, const std::string& path) {
  Attempt attempt;
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    attempt.status = HVD_ERR_NOT_FOUND;
    attempt.reason = errno == ENOENT ? "file not found" : strerror(errno);
    return attempt;
  }
  attempt.exists = true;
  void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kKeepMapped);
  if (dl == nullptr) {
    attempt.status = HVD_ERR_NOT_FOUND;
    attempt.reason = dlopen_reason(path);
    return attempt;
  }
  const char* symbol = entry_symbol(kind);
  using GetApi = const void* (*)(uint32_t, uint32_t);
  auto get_api = reinterpret_cast<GetApi>(dlsym(dl, symbol));
  if (get_api == nullptr) {
    dlclose(dl);
    attempt.status = HVD_ERR_NOT_FOUND;
    attempt.reason = std::string("entry symbol '") + symbol + "' missing";
    return attempt;
  }
  const void* table = get_api(HVD_ABI_VERSION_MAJOR, HVD_ABI_VERSION_MINOR);
  std::string problem = check_plugin_table(kind, table);
  auto header = static_cast<const hvd_plugin_header*>(table);
  if (header != nullptr &&
      header->struct_size >= HVD_STRUCT_SIZE(hvd_plugin_header, version)) {
    attempt.header = header;
  }
  if (!problem.empty()) {
    // Keep the library mapped while the caller reads the header, then close.
    attempt.dl = dl;
    attempt.status = HVD_ERR_VERSION;
    attempt.reason = problem;
    return attempt;
  }
  attempt.dl = dl;
  return attempt;
}

}  // namespace

Plugin::~Plugin() {
  if (dl_ != nullptr) dlclose(dl_);
}

const hvd_transport_api& Plugin::transport() const {
  if (kind_ != HVD_PLUGIN_TRANSPORT) {
    throw Error(HVD_ERR_INTERNAL, describe() + " is not a transport");
  }
  return *reinterpret_cast<const hvd_transport_api*>(header_);
}

const hvd_reducer_api& Plugin::reducer() const {
  if (kind_ != HVD_PLUGIN_REDUCER) {
    throw Error(HVD_ERR_INTERNAL, describe() + " is not a reducer");
  }
  return *reinterpret_cast<const hvd_reducer_api*>(header_);
}

const hvd_adapter_api& Plugin::adapter() const {
  if (kind_ != HVD_PLUGIN_ADAPTER) {
    throw Error(HVD_ERR_INTERNAL, describe() + " is not an adapter");
  }
  return *reinterpret_cast<const hvd_adapter_api*>(header_);
}

std::string Plugin::describe() const {
  return std::string(plugin_kind_name(kind_)) + " '" + name_ + "' (" + path_ +
         ")";
}

PluginLoader::PluginLoader(std::vector<std::string> search_path)
    : path_(std::move(search_path)) {}

std::shared_ptr<Plugin> PluginLoader::load(
    int kind, const std::string& name_or_path) const {
  const std::string what =
      std::string(plugin_kind_name(kind)) + " '" + name_or_path + "'";
  if (entry_symbol(kind) == nullptr) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "cannot load " + what +
                                              ": unknown plugin kind " +
                                              std::to_string(kind));
  }
  if (name_or_path.empty()) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, std::string("cannot load a ") +
                                              plugin_kind_name(kind) +
                                              ": the plugin name is empty");
  }

  std::vector<std::string> candidates;
  if (name_or_path.find('/') != std::string::npos) {
    candidates.push_back(name_or_path);
  } else {
    for (const std::string& dir : path_) {
      candidates.push_back(dir + "/" + file_name(kind, name_or_path));
    }
  }
  if (candidates.empty()) {
    throw Error(HVD_ERR_NOT_FOUND,
                "cannot load " + what + ": the plugin search path is empty");
  }

  std::string tried;
  for (const std::string& path : candidates) {
    Attempt attempt = try_file(kind, path);
    tried += "\n  " + path + ": " +
             (attempt.reason.empty() ? "loaded" : attempt.reason);
    if (!attempt.exists) continue;
    if (attempt.status != HVD_OK) {
      if (attempt.dl != nullptr) dlclose(attempt.dl);
      throw Error(attempt.status, "cannot load " + what + "; tried:" + tried);
    }
    std::shared_ptr<Plugin> plugin(new Plugin());
    plugin->kind_ = kind;
    plugin->name_ = name_or_path;
    plugin->path_ = path;
    plugin->dl_ = attempt.dl;
    plugin->header_ = attempt.header;
    return plugin;
  }
  throw Error(HVD_ERR_NOT_FOUND, "cannot load " + what + "; tried:" + tried);
}

std::vector<PluginLoader::Found> PluginLoader::discover() const {
  static const std::string prefix = "libhorovod-";
  static const std::string suffix = ".so";
  std::vector<Found> all;
  for (const std::string& dir : path_) {
    std::vector<std::string> files;
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* entry = readdir(d)) {
        std::string file = entry->d_name;
        if (file.size() > prefix.size() + suffix.size() &&
            file.compare(0, prefix.size(), prefix) == 0 &&
            file.compare(file.size() - suffix.size(), suffix.size(), suffix) ==
                0) {
          files.push_back(file);
        }
      }
      closedir(d);
    }
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      std::string stem = file.substr(
          prefix.size(), file.size() - prefix.size() - suffix.size());
      size_t dash = stem.find('-');
      if (dash == std::string::npos || dash == 0 || dash + 1 == stem.size()) {
        continue;  // not libhorovod-<kind>-<name>.so
      }
      Found found;
      found.kind = kind_from_name(stem.substr(0, dash));
      found.name = stem.substr(dash + 1);
      found.path = dir + "/" + file;
      if (found.kind == 0) {
        found.error = "unknown plugin kind '" + stem.substr(0, dash) + "'";
        all.push_back(found);
        continue;
      }
      Attempt attempt = try_file(found.kind, found.path);
      found.error = attempt.reason;
      if (attempt.header != nullptr) {
        found.abi_major = attempt.header->abi_major;
        found.abi_minor = attempt.header->abi_minor;
        if (attempt.status == HVD_OK && attempt.header->version != nullptr) {
          found.version = attempt.header->version;
        }
      }
      if (attempt.dl != nullptr) dlclose(attempt.dl);
      all.push_back(found);
    }
  }
  return all;
}

}  // namespace hvd
