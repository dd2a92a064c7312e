#include "runtime/agreement.h"

#include <functional>
#include <utility>

#include "device/device.h"

namespace hvd::runtime {
namespace {

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(ranks[i]);
  }
  return out;
}

// "" when every present rank gives the same text for `what`; otherwise the
// values with their ranks.
std::string compare(const std::vector<const Request*>& by_rank,
                    const std::function<std::string(const Request&)>& what) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    if (!by_rank[r]) continue;
    std::string value = what(*by_rank[r]);
    bool found = false;
    for (auto& g : groups) {
      if (g.first == value) {
        g.second.push_back(static_cast<int>(r));
        found = true;
        break;
      }
    }
    if (!found) groups.push_back({value, {static_cast<int>(r)}});
  }
  if (groups.size() <= 1) return "";
  std::string out;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i) out += "; ";
    out += groups[i].first + " on " + ranks_text(groups[i].second);
  }
  return out;
}

std::string number(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

bool reduces(hvd_collective c) {
  return c == HVD_COLL_ALLREDUCE || c == HVD_COLL_REDUCESCATTER;
}

}  // namespace

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string find_disagreement(const std::vector<const Request*>& by_rank) {
  const Request* first = nullptr;
  for (const Request* q : by_rank) {
    if (q) {
      first = q;
      break;
    }
  }
  if (!first) return "";
  const std::string name = "'" + first->name + "'";
  auto fail = [&](const std::string& what, const std::string& values) {
    return std::string(collective_name(first->collective)) + " " + name +
           ": ranks disagree on " + what + ": " + values;
  };

  std::string d = compare(by_rank, [](const Request& q) {
    return std::string(collective_name(q.collective));
  });
  if (!d.empty())
    return "tensor " + name + ": ranks disagree on the collective: " + d;

  const hvd_collective c = first->collective;
  if (c == HVD_COLL_BARRIER) return "";

  d = compare(by_rank, [](const Request& q) {
    return std::string(dtype_name(q.dtype));
  });
  if (!d.empty()) return fail("dtype", d);

  d = compare(by_rank, [](const Request& q) {
    return std::string(q.mem_kind == HVD_MEM_HOST ? "host" : "device") +
           " memory" +
           (q.mem_kind == HVD_MEM_HOST ? ""
                                       : " " + std::to_string(q.device_id));
  });
  if (!d.empty()) return fail("memory kind", d);

  d = compare(by_rank, [](const Request& q) {
    return std::to_string(q.shapes.size()) + " tensor(s)";
  });
  if (!d.empty()) return fail("the number of grouped tensors", d);

  if (reduces(c)) {
    d = compare(by_rank,
                [](const Request& q) { return std::string(op_name(q.op)); });
    if (!d.empty()) return fail("the reduction op", d);
    d = compare(by_rank, [](const Request& q) {
      return "prescale " + number(q.prescale) + ", postscale " +
             number(q.postscale);
    });
    if (!d.empty()) return fail("the scale factors", d);
  }
  if (c == HVD_COLL_BROADCAST) {
    d = compare(by_rank, [](const Request& q) {
      return "root " + std::to_string(q.root);
    });
    if (!d.empty()) return fail("the root", d);
  }

  for (size_t t = 0; t < first->shapes.size(); ++t) {
    const std::string which =
        first->shapes.size() > 1 ? " of tensor " + std::to_string(t) : "";
    if (c == HVD_COLL_ALLGATHER || c == HVD_COLL_ALLTOALL) {
      // The first dimension may differ; the rest must agree.
      d = compare(by_rank, [t](const Request& q) {
        const auto& s = q.shapes[t];
        std::vector<int64_t> rest(s.begin() + (s.empty() ? 0 : 1), s.end());
        return std::to_string(s.size()) + " dimensions, trailing " +
               shape_text(rest);
      });
      if (!d.empty())
        return fail("the shape" + which + " past the first dimension", d);
    } else {
      d = compare(by_rank, [t](const Request& q) {
        return "shape " + shape_text(q.shapes[t]);
      });
      if (!d.empty()) return fail("the shape" + which, d);
    }
  }
  return "";
}

}  // namespace hvd::runtime
