// Adasum of two vectors, as Horovod's FusedPairwiseReduceWithComm: the
// reference both the in-process adasum tests and the adasum job combine
// ranks' tensors with, pair by pair up a binary tree.
#pragma once

#include <cstddef>
#include <vector>

inline std::vector<double> adasum_pair(const std::vector<double>& a,
                                       const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  const double ca = aa >= 1e-8 ? 1.0 - ab / aa * 0.5 : 1.0;
  const double cb = bb >= 1e-8 ? 1.0 - ab / bb * 0.5 : 1.0;
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ca * a[i] + cb * b[i];
  return out;
}
