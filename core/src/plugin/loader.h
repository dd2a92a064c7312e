// Finds, loads and checks plugins.
//
// A name resolves to libhorovod-<kind>-<name>.so along the search path (the
// configured [plugins] search_path, then HOROVOD_PLUGIN_PATH, then the
// install's own lib/horovod/ found relative to the binary holding this code,
// so a copied prefix still works); a name containing '/' is a path. Loading
// is dlopen(RTLD_NOW | RTLD_LOCAL), then the entry symbol, then the table
// checks (kind, major version equal, struct_size large enough for v1.0,
// required functions present), all before any call into the plugin.
//
// Every failure throws hvd::Error whose message names the plugin, every path
// tried with why it failed (dlerror() text, missing entry symbol, "built for
// ABI 2.0, this core is 1.0", "table of 40 bytes, ABI 1.0 needs 216",
// "required function 'isend' missing"), with HVD_ERR_NOT_FOUND or
// HVD_ERR_VERSION. The first file that exists along the path is the one: a
// broken plugin is an error, never a reason to try the next folder.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "horovod/abi.h"
#include "horovod/adapter.h"
#include "horovod/reducer.h"
#include "horovod/transport.h"

namespace hvd {

const char* plugin_kind_name(int kind);  // "transport", "reducer", "adapter"

class Plugin {
 public:
  ~Plugin();  // dlclose: finalize every instance made from it first
  int kind() const { return kind_; }
  const std::string& name() const { return name_; }  // as asked for
  const std::string& path() const { return path_; }  // what was loaded
  const hvd_plugin_header& header() const { return *header_; }
  const hvd_transport_api& transport() const;  // throws if another kind
  const hvd_reducer_api& reducer() const;
  const hvd_adapter_api& adapter() const;
  // "transport 'shm' (/p/lib/horovod/libhorovod-transport-shm.so)", for
  // prefixing the plugin's own messages.
  std::string describe() const;

 private:
  friend class PluginLoader;
  Plugin() = default;
  int kind_ = 0;
  std::string name_, path_;
  void* dl_ = nullptr;
  const hvd_plugin_header* header_ = nullptr;
};

// Checks a table of `kind` as the loader does; returns "" when fine or what
// is wrong (used by hvd_register_adapter too).
std::string check_plugin_table(int kind, const void* table);

class PluginLoader {
 public:
  explicit PluginLoader(std::vector<std::string> search_path);
  // [plugins] search_path entries first, then HOROVOD_PLUGIN_PATH, then the
  // install's own plugin folder.
  static std::vector<std::string> default_search_path(
      const std::vector<std::string>& configured);
  const std::vector<std::string>& search_path() const { return path_; }

  std::shared_ptr<Plugin> load(int kind, const std::string& name_or_path) const;

  // Every libhorovod-*-*.so on the search path with its load result, for
  // horovod-info.
  struct Found {
    int kind = 0;
    std::string name, path, version;
    uint32_t abi_major = 0, abi_minor = 0;
    std::string error;  // "" when it loads and checks
  };
  std::vector<Found> discover() const;

 private:
  std::vector<std::string> path_;
};

// Create an instance of a loaded plugin through its init(). A failure throws
// hvd::Error with the plugin's status, naming the plugin, its path and the
// plugin's own message (last_error(NULL)).
hvd_transport* init_transport(const Plugin& plugin, const hvd_host* host);
hvd_reducer* init_reducer(const Plugin& plugin, const hvd_host* host);

}  // namespace hvd
