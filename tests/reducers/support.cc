#include "support.h"

#include <cstring>
#include <mutex>
#include <sstream>

namespace hvd::test {

const ReducerPlugin& plugin(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<ReducerPlugin>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto& p = loaded[name];
  if (!p) p = std::make_unique<ReducerPlugin>(name);
  return *p;
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

bool offered(const ReducerPlugin& p, hvd_collective coll) {
  hvd_reducer* r = nullptr;
  TestHost host(std::string("reducer.") + p.api().name);
  if (p.api().init(host.table(), &r) != HVD_OK) return false;
  hvd_team team{};
  team.struct_size = sizeof team;
  team.size = 4;
  hvd_score_range ranges[8];
  size_t count = 8;
  const bool any =
      p.api().score(r, coll, &team, HVD_MEM_HOST, ranges, &count) == HVD_OK &&
      count > 0;
  p.api().finalize(r);
  return any;
}

hvd_coll_args base_args(hvd_collective coll, hvd_dtype dtype) {
  hvd_coll_args a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.collective = coll;
  a.dtype = dtype;
  a.op = HVD_OP_SUM;
  a.prescale = 1.0;
  a.postscale = 1.0;
  a.device = hvd_device{HVD_MEM_HOST, 0};
  return a;
}

std::string compare(const Bytes& expected, const Bytes& actual, size_t esize) {
  if (expected == actual) return "";
  std::ostringstream out;
  if (expected.size() != actual.size()) {
    out << "size " << actual.size() << " instead of " << expected.size();
    return out.str();
  }
  size_t first = 0, wrong = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != actual[i]) {
      if (wrong == 0) first = i;
      ++wrong;
    }
  }
  out << wrong << " bytes differ, first at element " << first / esize
      << " (byte " << first << ": " << (int)actual[first] << " instead of "
      << (int)expected[first] << ")";
  return out.str();
}

const RankReducers& reducers(const std::string& plugin_name, int32_t ranks,
                             const std::map<std::string, std::string>& config) {
  // The plugin first, so it outlives the reducers made from it.
  const ReducerPlugin& loaded = plugin(plugin_name);
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<RankReducers>> made;
  std::ostringstream key;
  key << plugin_name << "/" << ranks;
  for (const auto& [k, v] : config) key << "/" << k << "=" << v;
  std::lock_guard<std::mutex> lock(mutex);
  auto& r = made[key.str()];
  if (!r) r = std::make_unique<RankReducers>(loaded, ranks, config);
  return *r;
}

}  // namespace hvd::test
