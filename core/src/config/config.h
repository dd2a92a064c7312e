// The effective configuration: built-in defaults, then horovod.toml, then
// Horovod's HOROVOD_* environment variables, then the launcher's flags (which
// arrive as environment variables too). Every value remembers where it came
// from. Keys are dotted paths ("runtime.fusion_threshold").
//
// Errors (unknown key, wrong type, bad value) throw hvd::Error with
// HVD_ERR_CONFIG and a message "FILE:LINE:COLUMN: key 'K': what is wrong
// (did you mean 'X'?)"; for environment variables the variable is named.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "horovod/abi.h"
#include "horovod/host.h"

namespace hvd {

struct ConfigLoadOptions {
  // Explicit file (hvd_init_options.config_path); empty: search
  // HOROVOD_CONFIG, ./horovod.toml, $XDG_CONFIG_HOME/horovod/horovod.toml
  // (or ~/.config/...), /etc/horovod/horovod.toml, else defaults only.
  std::string path;
  // Environment to read; nullptr: the process environment (environ).
  const std::map<std::string, std::string>* environment = nullptr;
  // Where ./horovod.toml is looked for; empty: the current directory.
  std::string working_directory;
  // Where the system-wide horovod.toml is looked for; empty: /etc/horovod.
  std::string system_directory;
};

// A rule of [[<collective>.rules]]: messages in [min_bytes, max_bytes) go to
// `reducer`.
struct ReducerRule {
  uint64_t min_bytes = 0;
  uint64_t max_bytes = UINT64_MAX;
  std::string reducer;
  std::string source;  // file:line:column
};

class Config {
 public:
  // Defaults only.
  Config();
  static Config load(const ConfigLoadOptions& options = {});
  // What load() does once it has read the file: `text` as the file `path`,
  // then `environment`.
  static Config from_text(
      const std::string& text, const std::string& path,
      const std::map<std::string, std::string>& environment);

  // The file read, or "" when only defaults and environment apply.
  const std::string& file() const;
  // The locations looked at, in order, up to and including the one read.
  const std::vector<std::string>& searched() const;

  // Typed access to the core's known keys. Throws HVD_ERR_INTERNAL for a
  // key that is not in the schema (a bug, not a user error).
  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;
  uint64_t get_bytes(const std::string& key) const;  // sizes
  std::chrono::nanoseconds get_duration(const std::string& key) const;

  // Where a key's effective value came from: "default", "FILE:LINE:COL" or
  // "HOROVOD_X".
  std::string source(const std::string& key) const;

  // Every known key with its effective value as TOML text and its source,
  // sorted by key; plugin tables follow as "transport.ofi.provider" etc.
  struct Entry {
    std::string key;
    std::string value;
    std::string source;
  };
  std::vector<Entry> entries() const;

  // Rules of [[<collective>.rules]] in file order (empty: use scores).
  std::vector<ReducerRule> rules(hvd_collective collective) const;

  // The plugin's own table, e.g. plugin_table("transport", "ofi"), as the
  // flattened C view handed to the plugin. Stable for the Config's life.
  const hvd_config_table* plugin_table(const std::string& kind,
                                       const std::string& name) const;
  // Formats a plugin's complaint about one of its keys with file, line and
  // column (for hvd_host.config_error).
  std::string plugin_key_error(const std::string& kind, const std::string& name,
                               const std::string& key,
                               const std::string& message) const;

  // Canonical text of the settings every rank must share (one "key = value"
  // line each, sorted), and its SHA-256 digest in hex. diff() names the keys
  // whose lines differ between two canonical texts.
  std::string canonical() const;
  std::string digest() const;
  static std::vector<std::string> diff(const std::string& canonical_a,
                                       const std::string& canonical_b);

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

// "64MiB", "1.5GB", "4096" -> bytes; "5s", "1ms", "250us", "2m" -> duration.
// false on bad text.
bool parse_bytes(const std::string& text, uint64_t* out);
bool parse_duration(const std::string& text, std::chrono::nanoseconds* out);

// A documented horovod.toml holding every key at its default, rendered from
// the schema (config/horovod.toml is this text; `horovod-info --defaults`
// prints it).
std::string default_config_text();

}  // namespace hvd
