// The plugins' timeline hooks (hvd_host timeline_begin / timeline_end) as
// spans of this timeline. A hook that names a row puts its span on that
// row; one that names none (NULL or "") puts it on every row of the task
// the background thread is driving, i.e. the tensors of the response whose
// reducer is calling.
#pragma once

#include <string>

#include "plugin/host_services.h"
#include "timeline/timeline.h"

namespace hvd::timeline {

class PluginHooks : public TimelineHooks {
 public:
  explicit PluginHooks(Timeline& timeline) : timeline_(timeline) {}
  void begin(const std::string& row, const std::string& phase) override;
  void end(const std::string& row, const std::string& phase) override;

 private:
  Timeline& timeline_;
};

}  // namespace hvd::timeline
