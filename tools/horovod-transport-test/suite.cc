#include "suite.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "cases.h"

namespace hvd_conformance {

namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  void (*run)(CaseContext&);
  bool on_request = false;  // runs only when named
};

// peer_death comes last: a rank leaves the job in it.
const Case kCases[] = {
    {"properties", case_properties},
    {"connect_before_accept", case_connect_before_accept},
    {"accept_before_connect", case_accept_before_connect},
    {"epoch_mismatch", case_epoch_mismatch},
    {"sizes", case_sizes},
    {"many_in_flight", case_many_in_flight},
    {"tag_matching", case_tag_matching},
    {"truncation", case_truncation},
    {"back_pressure", case_back_pressure},
    {"wait_fd", case_wait_fd},
    {"one_sided", case_one_sided},
    {"abort", case_abort},
    {"peer_death", case_peer_death},
    {"sever", case_sever, true},
};

enum Kind : uint8_t { kPass = 0, kFail = 1, kSkip = 2 };

struct Outcome {
  Kind kind = kPass;
  std::string message;
};

Bytes encode(const Outcome& o) {
  Bytes b(1 + o.message.size());
  b[0] = o.kind;
  std::copy(o.message.begin(), o.message.end(), b.begin() + 1);
  return b;
}

Outcome decode(const Bytes& b) {
  Outcome o;
  if (b.empty()) return {kFail, "no result"};
  o.kind = static_cast<Kind>(b[0]);
  o.message.assign(b.begin() + 1, b.end());
  return o;
}

// One line for the case from every reporting rank's outcome.
Outcome combine(const std::vector<std::pair<int, Outcome>>& all) {
  for (const auto& [rank, o] : all) {
    if (o.kind == kFail)
      return {kFail, "rank " + std::to_string(rank) + ": " + o.message};
  }
  for (const auto& [rank, o] : all) {
    if (o.kind == kSkip) return o;
  }
  return {};
}

Outcome run_case(const Case& c, CaseContext& ctx) {
  if (ctx.world.size() < 2) return {kSkip, "needs at least 2 ranks"};
  try {
    c.run(ctx);
    return {};
  } catch (const CaseFailure& f) {
    return {kFail, f.what()};
  } catch (const CaseSkip& s) {
    return {kSkip, s.what()};
  } catch (const std::exception& e) {
    return {kFail, std::string("unexpected exception: ") + e.what()};
  }
}

hvd_transport_properties probe(const hvd_transport_api& api, World& world,
                               std::string* error) {
  hvd_transport_properties props{};
  props.struct_size = sizeof(props);
  hvd_transport* t = nullptr;
  hvd_status s = api.init(world.host(), &t);
  if (s != HVD_OK || t == nullptr) {
    *error = "init failed: " + status_text(s) + ": " + api.last_error(nullptr);
    return props;
  }
  s = api.get_properties(t, &props);
  if (s != HVD_OK) {
    *error =
        "get_properties failed: " + status_text(s) + ": " + api.last_error(t);
  }
  api.finalize(t);
  return props;
}

}  // namespace

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const Case& c : kCases) names.push_back(c.name);
  return names;
}

int run_suite(World& world, const hvd_transport_api& api,
              const SuiteOptions& options, std::ostream& out) {
  std::vector<const Case*> selected;
  for (const Case& c : kCases) {
    bool wanted = options.cases.empty() && !c.on_request;
    for (const std::string& name : options.cases)
      wanted = wanted || name == c.name;
    if (wanted) selected.push_back(&c);
  }
  for (const std::string& name : options.cases) {
    bool known = false;
    for (const Case& c : kCases) known = known || name == c.name;
    if (!known) throw std::invalid_argument("no case named '" + name + "'");
  }
  CaseContext ctx{world, api, options};
  std::string probe_error;
  ctx.props = probe(api, world, &probe_error);
  int passed = 0, failed = 0;
  for (const Case* c : selected) {
    ctx.name = c->name;
    ctx.round = 0;
    auto start = Clock::now();
    Outcome mine =
        probe_error.empty() ? run_case(*c, ctx) : Outcome{kFail, probe_error};
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    // Results travel under a key of their own, so ranks meet again here
    // even when a case went wrong on some of them. Where a rank left in
    // the case (peer_death), only the survivors report.
    std::vector<std::pair<int, Outcome>> all;
    const std::string key = "hvd-conformance.result." + ctx.name;
    const auto patience = std::chrono::seconds(3 * options.timeout_s + 30);
    int reporting = world.size();
    if (c->run == case_peer_death && world.size() >= 2) reporting -= 1;
    world.put(key, encode(mine));
    if (world.rank() == 0 || reporting == world.size()) {
      for (int r = 0; r < reporting; ++r) {
        Outcome o;
        try {
          o = decode(world.get(r, key, patience));
        } catch (const std::exception& e) {
          o = {kFail, std::string("no result: ") + e.what()};
        }
        all.push_back({r, o});
      }
    }
    if (all.empty()) {  // a survivor other than rank 0 knows only its own
      if (mine.kind == kFail) ++failed;
      continue;
    }
    if (world.rank() != 0) {
      if (combine(all).kind == kFail) ++failed;
      continue;
    }
    Outcome o = combine(all);
    char time[32];
    std::snprintf(time, sizeof(time), " (%.2f s)", seconds);
    if (o.kind == kPass) {
      ++passed;
      out << "PASS " << c->name << time << "\n";
    } else if (o.kind == kFail) {
      ++failed;
      out << "FAIL " << c->name << ": " << o.message << "\n";
    } else {
      out << "SKIP " << c->name << ": " << o.message << "\n";
    }
    out.flush();
  }
  if (world.rank() == 0) {
    out << passed << " passed, " << failed << " failed\n";
    out.flush();
  }
  return failed;
}

}  // namespace hvd_conformance
