// The conformance suite, case by case, over 2 and 3 ranks as threads, for
// every built-in transport; and with settings that push each transport onto
// its less common paths (tiny rings, many streams).
#include <gtest/gtest.h>

#include <sstream>

#include "plugin_path.h"
#include "suite.h"
#include "thread_world.h"

namespace hvd_transport_test {
namespace {

struct Variant {
  std::string transport;
  std::string label;
  std::vector<Setting> settings;
  uint64_t max_bytes;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
#ifdef HVD_TEST_SHM_PLUGIN
  v.push_back({"shm", "shm", {}, 256ull << 20});
  // A 4 KiB ring: every message wraps and streams in many pieces.
  v.push_back({"shm",
               "shm_small_ring",
               {setting("ring_size", 4096), setting("max_requests", 64)},
               4ull << 20});
#endif
#ifdef HVD_TEST_TCP_PLUGIN
  v.push_back({"tcp", "tcp", {}, 256ull << 20});
  // Four streams, messages split from 64 KiB on.
  v.push_back({"tcp",
               "tcp_four_streams",
               {setting("streams", 4), setting("split_threshold", "64KiB"),
                setting("max_requests", 64)},
               16ull << 20});
#endif
  return v;
}

void PrintTo(const Variant& v, std::ostream* os) { *os << v.label; }

using Param = std::tuple<Variant, int, std::string>;

class Conformance : public ::testing::TestWithParam<Param> {};

TEST_P(Conformance, Case) {
  const auto& [variant, ranks, name] = GetParam();
  const hvd_transport_api& api = transport_api(variant.transport);
  hvd_conformance::SuiteOptions options;
  options.cases = {name};
  options.max_bytes = variant.max_bytes;
  ThreadJob job(ranks, variant.transport, variant.settings);
  std::ostringstream report;
  std::vector<int> failed(ranks, 0);
  job.run([&](hvd_conformance::World& world) {
    std::ostringstream discard;
    failed[world.rank()] = hvd_conformance::run_suite(
        world, api, options, world.rank() == 0 ? report : discard);
  });
  EXPECT_EQ(failed[0], 0) << report.str();
  EXPECT_EQ(report.str().find("FAIL"), std::string::npos) << report.str();
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [variant, ranks, name] = info.param;
  return variant.label + "_" + std::to_string(ranks) + "ranks_" + name;
}

INSTANTIATE_TEST_SUITE_P(
    Transports, Conformance,
    ::testing::Combine(::testing::ValuesIn(variants()), ::testing::Values(2, 3),
                       ::testing::ValuesIn(hvd_conformance::case_names())),
    param_name);

}  // namespace
}  // namespace hvd_transport_test
