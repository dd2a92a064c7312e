#include "plan.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <numeric>

#include "bootstrap/single_bootstrap.h"
#include "common/error.h"
#include "horovod_plugin/enums.h"
#include "p2p/team.h"
#include "plugin/loader.h"
#include "runtime/planner.h"
#include "runtime/reducers.h"

namespace hvd::info {
namespace {

const hvd_collective kCollectives[] = {HVD_COLL_ALLREDUCE, HVD_COLL_ALLGATHER,
                                       HVD_COLL_BROADCAST, HVD_COLL_ALLTOALL,
                                       HVD_COLL_REDUCESCATTER};

std::string size_text(uint64_t bytes) {
  if (bytes == UINT64_MAX) return "";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

}  // namespace

int32_t PlanLayout::size() const {
  return std::accumulate(per_host.begin(), per_host.end(), 0);
}

PlanLayout even_layout(int32_t size, int32_t hosts) {
  if (size < 1 || hosts < 1 || hosts > size) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "--plan: " + std::to_string(size) + " rank(s) cannot fill " +
                    std::to_string(hosts) + " host(s)");
  }
  PlanLayout l;
  for (int32_t h = 0; h < hosts; ++h) {
    l.per_host.push_back(size / hosts + (h < size % hosts ? 1 : 0));
  }
  return l;
}

PlanLayout parse_layout(const std::string& text) {
  PlanLayout l;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    std::string part = text.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    long n = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || n < 1 || n > 1 << 20) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "--layout '" + text +
                      "': expected ranks per host, such as 2,2 (each at "
                      "least 1)");
    }
    l.per_host.push_back(static_cast<int32_t>(n));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return l;
}

Plan build_plan(const Config& config, const PlanLayout& layout) {
  Plan plan;
  plan.layout = layout;
  std::vector<int> host_of;
  for (size_t h = 0; h < layout.per_host.size(); ++h) {
    host_of.insert(host_of.end(), static_cast<size_t>(layout.per_host[h]),
                   static_cast<int>(h));
  }
  std::vector<int32_t> ranks(host_of.size());
  std::iota(ranks.begin(), ranks.end(), 0);
  p2p::Team team(ranks, 0, host_of, 0, 0);

  PluginLoader loader(PluginLoader::default_search_path(
      config.get_strings("plugins.search_path")));
  SingleBootstrap bootstrap;
  runtime::ReducerSet set(loader, config, bootstrap);
  plan.reducers = set.names();

  for (hvd_collective coll : kCollectives) {
    PlanTable table;
    table.collective = hvd_plugin::collective_name(coll);
    const std::vector<runtime::ReducerScores>& scores =
        set.scores(coll, HVD_OP_SUM, HVD_FLOAT32, team.view(), HVD_MEM_HOST);
    std::vector<ReducerRule> rules = config.rules(coll);
    std::vector<uint64_t> edges = {0};
    for (const auto& s : scores) {
      for (const hvd_score_range& r : s.ranges) {
        edges.push_back(r.min_bytes);
        edges.push_back(r.max_bytes);
      }
    }
    for (const ReducerRule& r : rules) {
      edges.push_back(r.min_bytes);
      edges.push_back(r.max_bytes);
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    if (edges.back() == UINT64_MAX) edges.pop_back();
    for (size_t i = 0; i < edges.size(); ++i) {
      const uint64_t bytes = edges[i];
      PlanRow row;
      row.min_bytes = bytes;
      row.max_bytes = i + 1 < edges.size() ? edges[i + 1] : UINT64_MAX;
      for (size_t index :
           set.candidates(coll, team.view(), HVD_MEM_HOST, bytes)) {
        row.order.push_back(set.at(index).name());
        row.scores.push_back(runtime::score_for(scores[index], bytes));
      }
      for (const ReducerRule& r : rules) {
        if (bytes < r.min_bytes ||
            (bytes >= r.max_bytes && r.max_bytes != UINT64_MAX)) {
          continue;
        }
        if (!row.order.empty() && row.order[0] == r.reducer) {
          row.rule = r.source;
        }
        break;
      }
      if (!table.rows.empty() && table.rows.back().order == row.order &&
          table.rows.back().rule == row.rule) {
        table.rows.back().max_bytes = row.max_bytes;
      } else {
        table.rows.push_back(std::move(row));
      }
    }
    plan.tables.push_back(std::move(table));
  }
  return plan;
}

void print_plan_text(const Plan& plan, std::ostream& out) {
  std::string hosts;
  for (int32_t n : plan.layout.per_host) {
    hosts += (hosts.empty() ? "" : ",") + std::to_string(n);
  }
  out << "Plan for " << plan.layout.size() << " rank(s) on "
      << plan.layout.per_host.size() << " host(s) (ranks per host: " << hosts
      << "), host memory; reducers: " << plan.reducers << "\n";
  out << "Each range goes to the first reducer; the others follow when it "
         "declines.\n";
  for (const PlanTable& t : plan.tables) {
    out << "\n" << t.collective << "\n";
    for (const PlanRow& r : t.rows) {
      std::string range = "  " + size_text(r.min_bytes) + " .. " +
                          (r.max_bytes == UINT64_MAX ? std::string("")
                                                     : size_text(r.max_bytes));
      out << range;
      for (size_t pad = range.size(); pad < 24; ++pad) out << ' ';
      if (r.order.empty()) {
        out << "(no reducer)\n";
        continue;
      }
      for (size_t i = 0; i < r.order.size(); ++i) {
        out << (i ? ", " : "") << r.order[i];
        if (i == 0 && !r.rule.empty()) {
          out << " [rule " << r.rule << "]";
        } else {
          out << " [" << r.scores[i] << "]";
        }
      }
      out << "\n";
    }
  }
}

}  // namespace hvd::info
