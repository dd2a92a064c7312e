// "did you mean" for unknown keys and values.
#pragma once

#include <string>
#include <vector>

namespace hvd {

// Levenshtein distance.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word`: one whose last dotted component equals
// word's, else the nearest by edit distance when near enough (at most a
// third of the last component's length, and at least 2). "" when none is
// close.
std::string closest(const std::string& word,
                    const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" or "".
std::string did_you_mean(const std::string& word,
                         const std::vector<std::string>& candidates);

}  // namespace hvd
