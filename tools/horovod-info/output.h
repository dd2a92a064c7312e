// The report as text for people and as JSON for programs.
#pragma once

#include <ostream>
#include <string>

#include "report.h"

namespace hvd::info {

void print_text(const Report& report, std::ostream& out);
void print_json(const Report& report, std::ostream& out);
// {"error": message}, for --json when the configuration is invalid.
void print_json_error(const std::string& message, std::ostream& out);

}  // namespace hvd::info
