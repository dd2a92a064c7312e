// The configuration schema: every key the core knows, in one table, with its
// type, default, environment variable, whether every rank must share it, and
// its documentation. Defaults, config/horovod.toml (default_config_text()),
// Config::entries() and horovod-info all come from this table.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/value.h"
#include "horovod/abi.h"

namespace hvd {

// How an environment variable's text maps onto its key.
enum class EnvForm {
  Native,        // as the key's type reads it (numbers of seconds, bytes)
  Milliseconds,  // a plain number is milliseconds (HOROVOD_CYCLE_TIME)
  Microseconds,  // a plain number is microseconds
  Inverted,      // a boolean meaning the opposite (..._DISABLE)
  ColonList,     // "a:b:c"
  CommaList,     // "a,b,c"
};

struct KeySpec {
  std::string_view key;  // "runtime.fusion_threshold"
  ValueType type;
  // The default as TOML text. For a plugin key, an example for the docs.
  std::string_view default_toml;
  std::string_view env;  // "" when none
  EnvForm env_form;
  // Part of canonical()/digest(): ranks that differ here would take
  // different decisions. Per-rank keys (logging, timeline, local paths and
  // local waiting) may differ between ranks.
  bool shared;
  // A key inside a plugin's table that an environment variable feeds
  // ("transport.gloo.timeout"); not a core setting.
  bool plugin;
  std::string_view choices;  // "a|b|c": the allowed strings, or ""
  std::string_view doc;
};

struct SectionSpec {
  std::string_view name;  // "runtime"
  std::string_view doc;
  // Whether sub-tables are plugin tables ([transport.<name>]).
  bool plugin_tables;
};

struct CollectiveSpec {
  std::string_view name;  // "allreduce", for [[allreduce.rules]]
  hvd_collective collective;
};

const std::vector<KeySpec>& schema();
const std::vector<SectionSpec>& sections();
const std::vector<CollectiveSpec>& rule_collectives();

// nullptr when unknown.
const KeySpec* find_key(std::string_view key);
const SectionSpec* find_section(std::string_view name);
const CollectiveSpec* find_rule_collective(std::string_view name);

// "" when the key has no environment variable; else e.g.
// "HOROVOD_CYCLE_TIME (milliseconds)".
std::string env_description(const KeySpec& spec);

// For a key with choices: lower-cases *text and checks it is one of them.
// Returns "" or what is wrong (with a suggestion).
std::string check_choice(const KeySpec& spec, std::string* text);

}  // namespace hvd
