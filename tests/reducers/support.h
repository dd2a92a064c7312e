// Shared pieces of the reducer tests: plugins loaded once, which
// collectives a plugin offers, argument builders and result checks.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data.h"
#include "harness.h"

namespace hvd::test {

const ReducerPlugin& plugin(const std::string& name);
bool offered(const ReducerPlugin& p, hvd_collective coll);

hvd_coll_args base_args(hvd_collective coll, hvd_dtype dtype);

// "" when equal, else where and how the bytes differ.
std::string compare(const Bytes& expected, const Bytes& actual, size_t esize);

// Reducers for 1..8 ranks, made on first use, per configuration.
const RankReducers& reducers(
    const std::string& plugin_name, int32_t ranks,
    const std::map<std::string, std::string>& config = {});

// A plugin name as a test name ("halving-doubling" -> "halving_doubling").
std::string param_name(const ::testing::TestParamInfo<std::string>& info);

class PluginTest : public ::testing::TestWithParam<std::string> {
 protected:
  const ReducerPlugin& p() const { return plugin(GetParam()); }
};

// Skips the rest of the test when the plugin does not offer `coll`.
#define REQUIRE_OFFERED(coll)                                  \
  if (!offered(p(), coll)) {                                   \
    GTEST_SKIP() << GetParam() << " does not offer " << #coll; \
  }

}  // namespace hvd::test
