#include "boundary.h"

#include <cstring>

namespace hvd::reducers {
namespace {

thread_local char t_last_error[1024];

}  // namespace

void set_last_error(const char* message) {
  std::strncpy(t_last_error, message, sizeof t_last_error - 1);
  t_last_error[sizeof t_last_error - 1] = '\0';
}

const char* last_error_text() { return t_last_error; }

}  // namespace hvd::reducers
