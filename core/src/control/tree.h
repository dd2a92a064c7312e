// The shape of the control plane: a complete k-ary tree over world ranks,
// rooted at rank 0 (children of r are k*r+1 .. k*r+k).
//
// k = 4 by default: negotiation runs every cycle, and its latency is the
// tree's depth times one hop, so a wider tree is faster (depth 6 for 4096
// ranks where a binary tree needs 12), while each rank forwards a broadcast
// to at most k children one after another and the root merges k bundles.
// Four keeps both costs at a few microseconds per level.
#pragma once

#include <vector>

namespace hvd::control {

class KaryTree {
 public:
  KaryTree(int rank, int size, int arity)
      : rank_(rank), size_(size), arity_(arity < 1 ? 1 : arity) {}

  int parent() const { return rank_ == 0 ? -1 : (rank_ - 1) / arity_; }
  std::vector<int> children() const {
    std::vector<int> out;
    for (long c = static_cast<long>(arity_) * rank_ + 1;
         c <= static_cast<long>(arity_) * rank_ + arity_ && c < size_; ++c)
      out.push_back(static_cast<int>(c));
    return out;
  }
  int depth() const {
    int d = 0;
    for (int r = rank_; r > 0; r = (r - 1) / arity_) ++d;
    return d;
  }

 private:
  int rank_, size_, arity_;
};

}  // namespace hvd::control
