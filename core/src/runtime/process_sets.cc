#include "runtime/process_sets.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace hvd::runtime {

std::string describe_ranks(const std::vector<int32_t>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return "[" + text + "]";
}

ProcessSets::ProcessSets(int32_t my_world_rank, std::vector<int> host_of_world,
                         uint64_t epoch)
    : my_world_rank_(my_world_rank),
      host_of_world_(std::move(host_of_world)),
      epoch_(epoch) {}

void ProcessSets::add_initial(std::vector<int32_t> world_ranks) {
  add(std::move(world_ranks));
}

int32_t ProcessSets::add(std::vector<int32_t> world_ranks) {
  const int32_t id = next_id_;
  auto set = std::make_unique<ProcessSet>(id, std::move(world_ranks),
                                          my_world_rank_, host_of_world_,
                                          epoch_, my_world_rank_ == 0);
  std::lock_guard<std::mutex> lock(mutex_);
  sets_.push_back(std::move(set));
  ++next_id_;
  return id;
}

bool ProcessSets::retire(int32_t id) {
  const size_t index = index_of(id);
  if (id == 0 || index == sets_.size()) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  retired_.push_back(std::move(sets_[index]));
  sets_.erase(sets_.begin() + static_cast<std::ptrdiff_t>(index));
  return true;
}

void ProcessSets::forget_retired() {
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [](const std::unique_ptr<ProcessSet>& set) {
                                  return set->ops.empty();
                                }),
                 retired_.end());
}

void ProcessSets::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  sets_.clear();
}

ProcessSet* ProcessSets::find(int32_t id) const {
  for (const auto& s : sets_) {
    if (s->id == id) return s.get();
  }
  return nullptr;
}

size_t ProcessSets::index_of(int32_t id) const {
  size_t index = 0;
  while (index < sets_.size() && sets_[index]->id != id) ++index;
  return index;
}

bool ProcessSets::has_outsider_sets() const {
  for (const auto& set : sets_) {
    if (!set->member()) return true;
  }
  return false;
}

bool ProcessSets::awaiting_others() const {
  for (const auto& set : sets_) {
    if (!set->negotiating.empty() || set->join) return true;
  }
  return false;
}

bool ProcessSets::holds_ops() const {
  for (auto* sets : {&sets_, &retired_}) {
    for (const auto& set : *sets) {
      if (!set->ops.empty()) return true;
    }
  }
  return false;
}

bool ProcessSets::exists(int32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return find(id) != nullptr;
}

bool ProcessSets::layout(int32_t id, int32_t* rank, int32_t* size) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const ProcessSet* set = find(id);
  if (!set) return false;
  *rank = set->rank;
  *size = set->size();
  return true;
}

}  // namespace hvd::runtime
