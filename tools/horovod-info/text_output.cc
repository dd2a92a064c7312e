#include <algorithm>

#include "output.h"

namespace hvd::info {
namespace {

std::string padded(const std::string& text, size_t width) {
  return text.size() >= width ? text + " "
                              : text + std::string(width - text.size(), ' ');
}

// Multi-line text (the loader's "tried:" lists) indented under its column.
std::string indented(const std::string& text, size_t column) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += std::string(column, ' ');
  }
  return out;
}

std::string found_status(const PluginLoader::Found& found) {
  if (found.error.rfind("not loadable: ", 0) == 0) return found.error;
  if (!found.error.empty()) return "fails: " + found.error;
  return "ABI " + std::to_string(found.abi_major) + "." +
         std::to_string(found.abi_minor) + ", version " +
         (found.version.empty() ? "?" : found.version);
}

void print_plugins(const Report& report, std::ostream& out) {
  out << "\nPlugin search path\n";
  for (const std::string& dir : report.search_path) out << "  " << dir << "\n";
  if (report.search_path.empty()) out << "  (empty)\n";

  out << "\nPlugins found\n";
  if (report.plugins.empty()) out << "  (none)\n";
  size_t name_width = 0;
  for (const auto& found : report.plugins)
    name_width = std::max(name_width, found.name.size());
  for (const auto& found : report.plugins) {
    out << "  " << padded(plugin_kind_name(found.kind), 11)
        << padded(found.name, name_width + 2) << found.path << "\n"
        << "  " << std::string(11 + name_width + 2, ' ')
        << indented(found_status(found), 2 + 11 + name_width + 2 + 2) << "\n";
    auto details = report.details.find(found.path);
    if (details != report.details.end()) {
      out << "  " << std::string(11 + name_width + 2, ' ')
          << indented(details->second, 2 + 11 + name_width + 2) << "\n";
    }
  }
}

void print_selections(const Report& report, std::ostream& out) {
  out << "\nPlugins the configuration selects\n";
  size_t role_width = 0, name_width = 0;
  for (const Selection& s : report.selections) {
    role_width = std::max(role_width, s.role.size());
    for (const Candidate& c : s.candidates)
      name_width = std::max(name_width, c.name.size());
  }
  name_width = std::min<size_t>(name_width, 16);  // paths may be long
  const size_t detail_column = 2 + role_width + 2 + name_width + 2;
  for (const Selection& s : report.selections) {
    int chosen = s.chosen();
    for (size_t i = 0; i < s.candidates.size(); ++i) {
      const Candidate& c = s.candidates[i];
      out << "  " << padded(i == 0 ? s.role : "", role_width + 2)
          << padded(c.name, name_width + 2);
      if (c.loads) {
        out << "loads";
        if (static_cast<int>(i) == chosen) out << " (used)";
        out << ": " << c.path;
        if (!c.version.empty()) out << ", version " << c.version;
      } else {
        // Only GPU tensors need the gpu transport: its absence is no fault.
        out << (s.role == "transport.gpu"
                    ? "not available (needed only for GPU tensors): "
                    : "does not load: ")
            << indented(c.error, detail_column + 2);
      }
      out << "\n";
    }
    if (s.fallbacks && chosen < 0 && s.candidates.size() > 1)
      out << std::string(detail_column, ' ') << "none of these loads\n";
  }
}

void print_entries(const Report& report, std::ostream& out) {
  out << "\nEffective configuration\n";
  size_t width = 0;
  for (const auto& e : report.entries)
    width = std::max(width, e.key.size() + 3 + e.value.size());
  width = std::min<size_t>(width, 56);
  for (const auto& e : report.entries)
    out << "  " << padded(e.key + " = " + e.value, width + 1) << "# "
        << e.source << "\n";
}

}  // namespace

void print_text(const Report& report, std::ostream& out) {
  out << "Horovod " << report.version << ", plugin ABI " << report.abi_major
      << "." << report.abi_minor << "\n";
  out << "\nConfiguration\n";
  if (!report.config_file.empty()) {
    out << "  file:    " << report.config_file << "\n";
  } else {
    out << "  file:    none, built-in defaults (searched:";
    for (const std::string& path : report.config_searched) out << " " << path;
    out << ")\n";
  }
  out << "  digest:  " << report.digest << "\n";
  print_plugins(report, out);
  print_selections(report, out);
  print_entries(report, out);
}

}  // namespace hvd::info
