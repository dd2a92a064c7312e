// default_config_text(): the schema rendered as a documented horovod.toml.
#include <string_view>

#include "config/config.h"
#include "config/schema.h"

namespace hvd {
namespace {

constexpr size_t kWidth = 78;

// `text` as "# " comment lines of at most kWidth columns.
std::string comment(std::string_view text) {
  std::string out, line = "#";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(start, end - start);
    if (line.size() > 1 && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = "#";
    }
    line += " ";
    line += word;
    start = end + 1;
  }
  return out + line + "\n";
}

std::string key_block(const KeySpec& spec, std::string_view leaf,
                      bool commented) {
  std::string out = comment(spec.doc);
  std::string env = env_description(spec);
  if (!env.empty()) out += comment("Environment: " + env + ".");
  if (!spec.shared) out += comment("May differ between ranks.");
  out += commented ? "# " : "";
  out += std::string(leaf) + " = " + std::string(spec.default_toml) + "\n";
  return out;
}

bool in_section(const KeySpec& spec, std::string_view section) {
  return spec.key.size() > section.size() &&
         spec.key.substr(0, section.size()) == section &&
         spec.key[section.size()] == '.';
}

std::string section_block(const SectionSpec& section) {
  std::string out;
  std::string core_keys, plugin_keys;
  for (const KeySpec& spec : schema()) {
    if (!in_section(spec, section.name)) continue;
    std::string_view rest = spec.key.substr(section.name.size() + 1);
    if (!spec.plugin) {
      core_keys += "\n" + key_block(spec, rest, false);
    } else {
      size_t dot = rest.find('.');
      plugin_keys +=
          "\n# [" +
          std::string(spec.key.substr(0, section.name.size() + 1 + dot)) +
          "]\n" + key_block(spec, rest.substr(dot + 1), true);
    }
  }
  if (!core_keys.empty()) out += "[" + std::string(section.name) + "]\n";
  out += comment(section.doc) + core_keys;
  if (!plugin_keys.empty()) {
    out += "\n" +
           comment(
               "Plugin settings that environment variables "
               "also set:") +
           plugin_keys;
  }
  return out;
}

}  // namespace

std::string default_config_text() {
  std::string out =
      comment("horovod.toml: the configuration of a Horovod job.") + "#\n" +
      comment(
          "Read from the first of: the file given to hvd_init() or to "
          "horovodrun --config, $HOROVOD_CONFIG, ./horovod.toml, "
          "$XDG_CONFIG_HOME/horovod/horovod.toml (or "
          "~/.config/horovod/horovod.toml), /etc/horovod/horovod.toml. "
          "Horovod's HOROVOD_* environment variables override the "
          "file. Every value below is the built-in default; "
          "`horovod-info` shows the effective configuration and where "
          "each value came from, and `horovod-info --defaults` prints "
          "this file.") +
      "#\n" +
      comment(
          "At start-up the ranks compare a digest of their settings and "
          "stop, naming the keys that differ, unless all agree; keys "
          "marked \"May differ between ranks\" are left out of it.") +
      "#\n" +
      comment(
          "Sizes: \"64MiB\", \"1GB\" or a number of bytes. Durations: "
          "\"5s\", \"1ms\", \"250us\" or a number of seconds. An unknown "
          "key is an error.");
  for (const SectionSpec& section : sections())
    out += "\n" + section_block(section);

  std::string collectives;
  for (const CollectiveSpec& c : rule_collectives())
    collectives += (collectives.empty() ? "" : ", ") +
                   ("[[" + std::string(c.name) + ".rules]]");
  out += "\n" +
         comment("Reducer rules, a list per collective (" + collectives +
                 "): messages of min_bytes <= size < max_bytes go to "
                 "`reducer`. Rules are tried in file order and the first "
                 "that matches wins; without a matching rule, the loaded "
                 "reducers' own scores decide. min_bytes defaults to 0, "
                 "max_bytes to no limit. For example:") +
         "#\n"
         "# [[allreduce.rules]]\n"
         "# max_bytes = \"64KiB\"\n"
         "# reducer = \"tree\"\n"
         "#\n"
         "# [[allreduce.rules]]\n"
         "# reducer = \"ring\"\n";
  return out;
}

}  // namespace hvd
