#include "p2p/gpu_scope.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace hvd::p2p {
namespace {

// "rank(s) 0, 3" for some ranks, "every rank" for all of them.
std::string ranks_text(const std::vector<int32_t>& ranks, size_t world) {
  if (ranks.size() == world && world > 1) return "every rank";
  std::string out = ranks.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return out;
}

// "<ranks>: <text>; <ranks>: <text>", grouped by text in order of first
// appearance.
std::string grouped(const std::vector<std::string>& per_rank) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int32_t>> ranks;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    auto [it, fresh] = ranks.try_emplace(per_rank[r]);
    if (fresh) order.push_back(per_rank[r]);
    it->second.push_back(static_cast<int32_t>(r));
  }
  std::string out;
  for (const std::string& text : order) {
    out += (out.empty() ? "" : "; ") +
           ranks_text(ranks[text], per_rank.size()) + ": " + text;
  }
  return out;
}

}  // namespace

GpuScope agree_gpu_scope(const std::vector<GpuOffer>& offers,
                         const std::vector<int>& host_of) {
  GpuScope scope;
  if (offers.empty()) return scope;
  std::vector<std::string> missing, names;
  bool any_missing = false, differ = false;
  for (const GpuOffer& o : offers) {
    any_missing = any_missing || o.name.empty();
    differ = differ || o.name != offers[0].name;
    missing.push_back(o.name.empty() ? o.why_not : "opened '" + o.name + "'");
    names.push_back(o.name.empty() ? "none" : "'" + o.name + "'");
  }
  if (any_missing) {
    scope.why_not = grouped(missing);
    return scope;
  }
  if (differ) {
    scope.why_not = "the ranks opened different transports (" + grouped(names) +
                    "; a fallback taken on some ranks only)";
    return scope;
  }
  std::map<int, std::vector<int32_t>> ranks_of_host;
  for (size_t r = 0; r < offers.size(); ++r) {
    ranks_of_host[host_of[r]].push_back(static_cast<int32_t>(r));
  }
  for (const auto& [host, ranks] : ranks_of_host) {
    int devices = offers[ranks[0]].devices;
    for (int32_t r : ranks) devices = std::min(devices, offers[r].devices);
    if (static_cast<int>(ranks.size()) > devices) {
      scope.why_not = ranks_text(ranks, 0) + " share a host with " +
                      std::to_string(devices) +
                      " CUDA device(s): [transport] gpu needs one per rank";
      return scope;
    }
  }
  scope.open = true;
  scope.name = offers[0].name;
  scope.connects = true;
  for (const GpuOffer& o : offers) scope.connects = scope.connects && o.listens;
  return scope;
}

}  // namespace hvd::p2p
