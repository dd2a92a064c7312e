#include "score_list.h"

#include <string>

#include "horovod_plugin/boundary.h"

namespace hvd::reducers {

bool ScoreList::open(const char* reducer, hvd_score_range* ranges,
                     size_t* count) {
  if (count == nullptr || (ranges == nullptr && *count > 0)) {
    hvd_plugin::set_last_error(std::string(reducer) +
                               " score: count or ranges is NULL");
    return false;
  }
  ranges_ = ranges;
  count_ = count;
  room_ = *count;
  *count = 0;
  return true;
}

void ScoreList::add(uint64_t min_bytes, uint64_t max_bytes, int32_t score) {
  if (*count_ == room_) return;
  hvd_score_range& out = ranges_[(*count_)++];
  out.struct_size = sizeof out;
  out.min_bytes = min_bytes;
  out.max_bytes = max_bytes;
  out.score = score;
}

}  // namespace hvd::reducers
