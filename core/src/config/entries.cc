// Config::entries(), canonical(), digest() and diff(): the effective
// configuration as text.
#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "config/config.h"
#include "config/impl.h"
#include "config/schema.h"

namespace hvd {
namespace {

std::string rule_text(const ReducerRule& rule) {
  std::string text = "{ ";
  if (rule.min_bytes != 0)
    text += "min_bytes = " + toml_text(Value(rule.min_bytes)) + ", ";
  if (rule.max_bytes != UINT64_MAX)
    text += "max_bytes = " + toml_text(Value(rule.max_bytes)) + ", ";
  return text + "reducer = " + toml_quote(rule.reducer) + " }";
}

// Whether an entry belongs to the settings every rank must share: core keys
// as the schema says, rules always, plugin keys unless the schema knows
// them as per-rank (transport.tcp.interfaces names this host's NICs).
bool shared_key(const std::string& key) {
  const KeySpec* spec = find_key(key);
  return spec ? spec->shared : true;
}

}  // namespace

std::vector<Config::Entry> Config::entries() const {
  std::vector<Entry> out;
  for (const auto& [key, setting] : impl_->settings)
    out.push_back({key, toml_text(setting.value), setting.source});
  for (const CollectiveSpec& collective : rule_collectives()) {
    const auto& rules = impl_->rules[collective.collective];
    for (size_t i = 0; i < rules.size(); ++i) {
      out.push_back(
          {std::string(collective.name) + ".rules[" + std::to_string(i) + "]",
           rule_text(rules[i]), rules[i].source});
    }
  }
  for (const auto& [name, table] : impl_->plugins) {
    for (const auto& [key, value] : table->values())
      out.push_back({name + "." + key, plugin_value_text(value), value.source});
  }
  return out;
}

std::string Config::canonical() const {
  std::vector<std::string> lines;
  for (const Entry& entry : entries()) {
    if (shared_key(entry.key)) lines.push_back(entry.key + " = " + entry.value);
  }
  std::sort(lines.begin(), lines.end());
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

std::string Config::digest() const {
  std::string text = canonical();
  unsigned char hash[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), hash, &length, EVP_sha256(),
                 nullptr) != 1) {
    throw Error(HVD_ERR_SYSTEM, "SHA-256 of the configuration failed");
  }
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < length; ++i) {
    snprintf(byte, sizeof byte, "%02x", hash[i]);
    hex += byte;
  }
  return hex;
}

namespace {

std::map<std::string, std::string> parse_canonical(const std::string& text) {
  std::map<std::string, std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    size_t eq = line.find(" = ");
    if (eq != std::string::npos)
      lines[line.substr(0, eq)] = line.substr(eq + 3);
    else if (!line.empty())
      lines[line] = "";
    start = end + 1;
  }
  return lines;
}

}  // namespace

std::vector<std::string> Config::diff(const std::string& canonical_a,
                                      const std::string& canonical_b) {
  auto a = parse_canonical(canonical_a);
  auto b = parse_canonical(canonical_b);
  std::vector<std::string> keys;
  for (const auto& [key, value] : a) {
    auto it = b.find(key);
    if (it == b.end() || it->second != value) keys.push_back(key);
  }
  for (const auto& [key, value] : b)
    if (!a.count(key)) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace hvd
