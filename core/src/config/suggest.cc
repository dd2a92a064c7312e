#include "config/suggest.h"

#include <algorithm>

namespace hvd {
namespace {

std::string last_component(const std::string& key) {
  size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

}  // namespace

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

std::string closest(const std::string& word,
                    const std::vector<std::string>& candidates) {
  // A key written in the wrong table: "fusion_threshold" at the top level.
  std::string leaf = last_component(word);
  for (const std::string& c : candidates)
    if (c != word && last_component(c) == leaf) return c;

  // Near enough: a third of the last component, so a long table name does
  // not make unrelated keys look close.
  std::string best;
  size_t best_distance = std::max<size_t>(2, leaf.size() / 3) + 1;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word,
                         const std::vector<std::string>& candidates) {
  std::string best = closest(word, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace hvd
