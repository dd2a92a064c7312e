#include "runtime/coordinator.h"

#include "runtime/agreement.h"

namespace hvd::runtime {

Coordinator::Coordinator(int32_t process_set, int32_t set_size)
    : process_set_(process_set), size_(set_size), joined_(set_size, false) {}

void Coordinator::submit(int32_t rank, Request request) {
  if (request.collective == HVD_COLL_JOIN) {
    if (!joined_[rank]) {
      joined_[rank] = true;
      ++join_count_;
    }
    last_joined_ = rank;
    return;
  }
  auto [it, inserted] = table_.try_emplace(request.name);
  Pending& p = it->second;
  if (inserted) {
    p.by_rank.resize(size_);
    p.present.assign(size_, false);
    order_.push_back(request.name);
  }
  if (p.present[rank]) return;  // a rank never has one name in flight twice
  p.present[rank] = true;
  p.by_rank[rank] = std::move(request);
  ++p.count;
}

std::vector<Response> Coordinator::take_ready() {
  std::vector<Response> ready;
  for (auto it = order_.begin(); it != order_.end();) {
    Pending& p = table_.at(*it);
    int32_t absent_joined = 0;
    for (int32_t r = 0; r < size_; ++r) {
      if (!p.present[r] && joined_[r]) ++absent_joined;
    }
    if (p.count + absent_joined < size_) {
      ++it;
      continue;
    }
    ready.push_back(build(*it, p));
    table_.erase(*it);
    it = order_.erase(it);
  }
  if (join_count_ == size_) {
    Response r;
    r.kind = ResponseKind::kJoin;
    r.process_set = process_set_;
    r.collective = HVD_COLL_JOIN;
    r.last_joined = last_joined_;
    ready.push_back(std::move(r));
    joined_.assign(size_, false);
    join_count_ = 0;
    last_joined_ = -1;
  }
  return ready;
}

Response Coordinator::error(const std::string& name, const Pending& p,
                            hvd_status status,
                            const std::string& message) const {
  Response r;
  r.kind = ResponseKind::kError;
  r.process_set = process_set_;
  for (int32_t k = 0; k < size_; ++k) {
    if (p.present[k]) {
      r.collective = p.by_rank[k].collective;
      break;
    }
  }
  r.error_status = status;
  r.error = message;
  r.entries.push_back(Entry{name, {}, {}});
  return r;
}

Response Coordinator::build_set_change(const std::string& name,
                                       const Pending& p) const {
  const char* call = nullptr;
  const Request* first = nullptr;
  for (int32_t r = 0; r < size_; ++r) {
    if (!p.present[r]) {
      return error(name, p, HVD_ERR_INVALID_ARGUMENT,
                   "process set change '" + name + "': rank " +
                       std::to_string(r) +
                       " has joined; every rank must take part");
    }
    const Request& q = p.by_rank[r];
    call = call_name(q);
    if (!first) {
      first = &q;
    } else if (q.set_change != first->set_change ||
               q.shapes != first->shapes) {
      auto text = [](const Request& x) {
        std::string t = x.set_change == SetChange::kAdd ? "add [" : "remove [";
        for (size_t i = 0; !x.shapes.empty() && i < x.shapes[0].size(); ++i) {
          t += (i ? ", " : "") + std::to_string(x.shapes[0][i]);
        }
        return t + "]";
      };
      return error(name, p, HVD_ERR_MISMATCH,
                   std::string(call) + ": ranks disagree: " + text(*first) +
                       " on rank 0, " + text(q) + " on rank " +
                       std::to_string(r));
    }
  }
  Response r;
  r.kind = ResponseKind::kBarrier;
  r.process_set = process_set_;
  r.collective = HVD_COLL_BARRIER;
  r.set_change = first->set_change;
  r.entries.push_back(Entry{name, first->shapes, {}});
  return r;
}

Response Coordinator::build(const std::string& name, Pending& p) const {
  std::vector<const Request*> by_rank(size_, nullptr);
  const Request* first = nullptr;
  std::vector<int> joined_absent;
  for (int32_t r = 0; r < size_; ++r) {
    if (p.present[r]) {
      by_rank[r] = &p.by_rank[r];
      if (!first) first = by_rank[r];
    } else {
      joined_absent.push_back(r);
    }
  }
  for (int32_t r = 0; r < size_; ++r) {
    if (p.present[r] && p.by_rank[r].failure_status != HVD_OK) {
      return error(name, p, p.by_rank[r].failure_status,
                   std::string(call_name(p.by_rank[r])) + " '" + name +
                       "': rank " + std::to_string(r) +
                       " could not take part: " + p.by_rank[r].failure);
    }
  }
  if (first->set_change != SetChange::kNone) return build_set_change(name, p);
  std::string disagreement = find_disagreement(by_rank);
  if (!disagreement.empty()) {
    return error(name, p, HVD_ERR_MISMATCH, disagreement);
  }
  if (!joined_absent.empty() && first->collective != HVD_COLL_ALLREDUCE) {
    std::string ranks;
    for (size_t i = 0; i < joined_absent.size(); ++i) {
      ranks += (i ? ", " : "") + std::to_string(joined_absent[i]);
    }
    return error(name, p, HVD_ERR_UNSUPPORTED,
                 std::string(collective_name(first->collective)) + " '" + name +
                     "': rank(s) " + ranks +
                     " have joined; only allreduce runs with joined ranks");
  }

  Response r;
  r.kind = first->collective == HVD_COLL_BARRIER ? ResponseKind::kBarrier
                                                 : ResponseKind::kData;
  r.process_set = process_set_;
  r.collective = first->collective;
  r.dtype = first->dtype;
  r.mem_kind = first->mem_kind;
  r.device_id = first->device_id;
  r.op = first->op;
  r.prescale = first->prescale;
  r.postscale = first->postscale;
  r.root = first->root;
  Entry e;
  e.name = name;
  e.shapes = first->shapes;
  if (first->collective == HVD_COLL_ALLGATHER) {
    e.per_rank.assign(first->shapes.size(), std::vector<int64_t>(size_, 0));
    for (size_t t = 0; t < first->shapes.size(); ++t) {
      for (int32_t k = 0; k < size_; ++k) {
        e.per_rank[t][k] = p.by_rank[k].shapes[t][0];
      }
    }
  } else if (first->collective == HVD_COLL_ALLTOALL) {
    e.per_rank.resize(size_);
    for (int32_t k = 0; k < size_; ++k) e.per_rank[k] = p.by_rank[k].splits;
  }
  r.entries.push_back(std::move(e));
  return r;
}

}  // namespace hvd::runtime
