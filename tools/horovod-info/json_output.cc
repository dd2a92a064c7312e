#include "json_writer.h"
#include "output.h"

namespace hvd::info {
namespace {

void write_strings(JsonWriter& json, const std::vector<std::string>& list) {
  json.begin_array();
  for (const std::string& s : list) json.value(s);
  json.end_array();
}

std::string abi_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

void write_found(JsonWriter& json, const PluginLoader::Found& found,
                 const std::map<std::string, std::string>& details) {
  json.begin_object();
  json.field("kind", plugin_kind_name(found.kind));
  json.field("name", found.name);
  json.field("path", found.path);
  json.field("loads", found.error.empty());
  if (found.abi_major != 0)
    json.field("abi", abi_text(found.abi_major, found.abi_minor));
  if (!found.version.empty()) json.field("version", found.version);
  if (!found.error.empty()) json.field("error", found.error);
  auto text = details.find(found.path);
  if (text != details.end()) json.field("details", text->second);
  json.end_object();
}

void write_selection(JsonWriter& json, const Selection& selection) {
  json.begin_object();
  json.field("role", selection.role);
  json.field("source", selection.source);
  json.key("candidates");
  json.begin_array();
  int chosen = selection.chosen();
  for (size_t i = 0; i < selection.candidates.size(); ++i) {
    const Candidate& c = selection.candidates[i];
    json.begin_object();
    json.field("name", c.name);
    json.field("loads", c.loads);
    if (selection.fallbacks) json.field("used", static_cast<int>(i) == chosen);
    if (c.loads) json.field("path", c.path);
    if (!c.version.empty()) json.field("version", c.version);
    if (!c.loads) json.field("error", c.error);
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

}  // namespace

void print_json(const Report& report, std::ostream& out) {
  JsonWriter json(out);
  json.begin_object();
  json.field("version", report.version);
  json.field("abi", abi_text(report.abi_major, report.abi_minor));

  json.key("config");
  json.begin_object();
  json.field("file", report.config_file);
  json.key("searched");
  write_strings(json, report.config_searched);
  json.field("digest", report.digest);
  json.key("entries");
  json.begin_array();
  for (const auto& e : report.entries) {
    json.begin_object();
    json.field("key", e.key);
    json.field("value", e.value);
    json.field("source", e.source);
    json.end_object();
  }
  json.end_array();
  json.end_object();

  json.key("plugins");
  json.begin_object();
  json.key("search_path");
  write_strings(json, report.search_path);
  json.key("found");
  json.begin_array();
  for (const auto& found : report.plugins)
    write_found(json, found, report.details);
  json.end_array();
  json.key("selected");
  json.begin_array();
  for (const Selection& s : report.selections) write_selection(json, s);
  json.end_array();
  json.end_object();

  json.end_object();
}

void print_json_error(const std::string& message, std::ostream& out) {
  JsonWriter json(out);
  json.begin_object();
  json.field("error", message);
  json.end_object();
}

}  // namespace hvd::info
