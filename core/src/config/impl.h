// What a Config holds. Built once by Config() / Config::load(), then shared
// read-only by every copy.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/plugin_table.h"
#include "config/value.h"

namespace hvd {

struct Config::Impl {
  std::string file;
  std::vector<std::string> searched;
  std::map<std::string, Setting> settings;  // every core key of the schema
  // "transport.ofi" -> its table (unique_ptr: the C view must not move).
  std::map<std::string, std::unique_ptr<PluginTable>> plugins;
  std::array<std::vector<ReducerRule>, HVD_COLL_COUNT> rules;

  // Empty tables handed to plugins the file says nothing about.
  mutable std::mutex empty_mutex;
  mutable std::map<std::string, std::unique_ptr<PluginTable>> empty_tables;

  // The table "kind.name", created empty if absent (before freezing).
  PluginTable& plugin(const std::string& table, const std::string& source);
};

// Settings at their schema defaults.
void apply_defaults(Config::Impl& impl);

// Throws hvd::Error(HVD_ERR_CONFIG) "WHERE: key 'KEY': WHAT".
[[noreturn]] void throw_config_error(const std::string& where,
                                     const std::string& key,
                                     const std::string& what);

}  // namespace hvd
