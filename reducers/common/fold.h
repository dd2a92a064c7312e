// The fold of recursive doubling and halving off a power of two (as in
// MPICH): with p the largest power of two <= n and rem = n - p, each even
// rank below 2 * rem hands its data to the odd rank above it and waits for
// the result; the other p ranks run the power-of-two algorithm under new
// ranks 0 .. p-1.
#pragma once

#include <cstdint>

namespace hvd::reducers {

struct PowerOfTwoFold {
  int32_t p = 1;         // the largest power of two <= n
  int32_t levels = 0;    // log2(p)
  int32_t rem = 0;       // n - p
  bool folds = false;    // sends to rank + 1 and waits for the result
  bool absorbs = false;  // takes rank - 1's part first, returns the result
  int32_t new_rank = 0;  // among the p (meaningless when folds)

  PowerOfTwoFold(int32_t n, int32_t rank) {
    while (p * 2 <= n) {
      p *= 2;
      ++levels;
    }
    rem = n - p;
    folds = rank < 2 * rem && rank % 2 == 0;
    absorbs = rank < 2 * rem && rank % 2 == 1;
    new_rank = rank < 2 * rem ? rank / 2 : rank - rem;
  }
  // The team rank of new rank `v`.
  int32_t old_rank(int32_t v) const { return v < rem ? 2 * v + 1 : v + rem; }
};

}  // namespace hvd::reducers
