// The coordinator's bookkeeping for one process set (it runs on world rank
// 0, as Horovod's): which names each rank has submitted, and when every
// rank of the set has, the response. Pure logic, no I/O, so it is tested
// alone.
//
// A name is ready once every rank of the set has submitted it or has
// joined (join lets a rank that ran out of data take part in allreduces with
// zeros). Ready names come out in the order of their first submission,
// whatever order the ranks submitted them in; all ranks then execute them
// in that order. A ready name whose requests disagree (collective, dtype,
// shape, op, scale factors, root, grouping) becomes an error response that
// names the tensor, the ranks and the disagreement.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/messages.h"

namespace hvd::runtime {

class Coordinator {
 public:
  // `set_size` ranks, numbered 0 .. set_size-1 within the set.
  Coordinator(int32_t process_set, int32_t set_size);

  // Set rank `rank`'s request, in that rank's submission order.
  void submit(int32_t rank, Request request);
  // The responses that became ready since the last call, in order; single
  // entries, not yet fused.
  std::vector<Response> take_ready();

  size_t pending() const { return table_.size(); }
  int32_t joined() const { return join_count_; }
  bool has_joined(int32_t rank) const { return joined_[rank]; }

 private:
  struct Pending {
    std::vector<Request> by_rank;
    std::vector<bool> present;
    int32_t count = 0;
  };
  Response build(const std::string& name, Pending& pending) const;
  Response build_set_change(const std::string& name,
                            const Pending& pending) const;
  Response error(const std::string& name, const Pending& pending,
                 hvd_status status, const std::string& message) const;

  int32_t process_set_;
  int32_t size_;
  std::unordered_map<std::string, Pending> table_;
  std::list<std::string> order_;  // names in order of first submission
  std::vector<bool> joined_;
  int32_t join_count_ = 0;
  int32_t last_joined_ = -1;
};

}  // namespace hvd::runtime
