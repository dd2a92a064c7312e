// Not a test: what the transport does between ranks 0 and 1, for the
// record. Bandwidth of 64 MiB messages (median), and the latency of 8-byte
// messages (half a round trip, median over batches).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "pattern.h"
#include "session.h"
#include "suite.h"

namespace hvd_conformance {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Rank 0 sends `bytes` from `src` to rank 1, which answers with one byte;
// the seconds of each round trip.
std::vector<double> stream(Session& s, const uint8_t* src, uint8_t* dst,
                           uint64_t bytes, int rounds, uint64_t tag) {
  std::vector<double> seconds;
  uint8_t ack = 0, got = 0;
  if (s.rank() == 1) {
    Op* next = s.recv(0, dst, bytes, tag);
    for (int i = 0; i < rounds; ++i) {
      s.wait(next);
      Session::expect_ok(next, bytes);
      if (i + 1 < rounds) next = s.recv(0, dst, bytes, tag);
      s.wait(s.send(0, &ack, 1, tag + 1));
    }
  } else {
    for (int i = 0; i < rounds; ++i) {
      auto start = Clock::now();
      Op* r = s.recv(1, &got, 1, tag + 1);
      Op* w = s.send(1, src, bytes, tag);
      s.wait({r, w});
      seconds.push_back(
          std::chrono::duration<double>(Clock::now() - start).count());
    }
  }
  return seconds;
}

}  // namespace

void run_bench(World& world, const hvd_transport_api& api, std::ostream& out) {
  SuiteOptions options;
  CaseContext ctx{world, api, options};
  ctx.name = "bench";
  ctx.props.struct_size = sizeof(ctx.props);
  {
    hvd_transport* t = nullptr;
    if (api.init(world.host(), &t) != HVD_OK) {
      throw std::runtime_error(std::string("init failed: ") +
                               api.last_error(nullptr));
    }
    api.get_properties(t, &ctx.props);
    api.finalize(t);
  }
  Session s(ctx);
  s.connect_all(ConnectOrder::kTogether);
  if (s.rank() < 2) {
    constexpr uint64_t kBytes = 64u << 20;
    constexpr int kRounds = 15;
    Buffer src(kBytes), dst(kBytes);
    fill(src.data(), kBytes, 1);
    fill(dst.data(), kBytes, 2);
    stream(s, src.data(), dst.data(), kBytes, 2, 10);  // warm up
    std::vector<double> plain =
        stream(s, src.data(), dst.data(), kBytes, kRounds, 20);
    std::vector<double> shared;
    void* ptr = nullptr;
    hvd_mr* mr = nullptr;
    bool one_sided = (ctx.props.flags & HVD_TRANSPORT_ONE_SIDED) &&
                     api.mem_alloc != nullptr &&
                     api.mem_alloc(s.transport(), kBytes, {HVD_MEM_HOST, 0},
                                   &ptr, &mr) == HVD_OK;
    if (one_sided) {
      fill(ptr, kBytes, 3);
      stream(s, static_cast<uint8_t*>(ptr), dst.data(), kBytes, 2, 30);
      shared = stream(s, static_cast<uint8_t*>(ptr), dst.data(), kBytes,
                      kRounds, 40);
    }
    // Latency: batches of ping-pongs.
    constexpr int kBatches = 21, kPerBatch = 200;
    std::vector<double> half_trips;
    uint64_t word = 0;
    uint64_t back = 0;
    for (int b = 0; b < kBatches; ++b) {
      auto start = Clock::now();
      for (int i = 0; i < kPerBatch; ++i) {
        if (s.rank() == 0) {
          Op* r = s.recv(1, &back, sizeof(back), 50);
          s.wait(s.send(1, &word, sizeof(word), 50));
          s.wait(r);
        } else {
          Op* r = s.recv(0, &back, sizeof(back), 50);
          s.wait(r);
          s.wait(s.send(0, &word, sizeof(word), 50));
        }
      }
      half_trips.push_back(
          std::chrono::duration<double>(Clock::now() - start).count() /
          kPerBatch / 2);
    }
    if (one_sided) api.mem_free(s.transport(), ptr, mr);
    if (s.rank() == 0) {
      auto report = [&](const char* what, const std::vector<double>& t) {
        std::vector<double> gbps;
        for (double x : t) gbps.push_back(kBytes / x / 1e9);
        std::sort(gbps.begin(), gbps.end());
        char line[200];
        std::snprintf(line, sizeof(line),
                      "bandwidth %s: 64 MiB messages%s: median %.2f GB/s "
                      "(min %.2f, max %.2f, %d rounds)\n",
                      api.name, what, median(gbps), gbps.front(), gbps.back(),
                      kRounds);
        out << line;
      };
      report("", plain);
      if (one_sided) report(" from mem_alloc memory", shared);
      char line[160];
      std::snprintf(line, sizeof(line),
                    "latency %s: 8-byte messages, half a round trip: median "
                    "%.2f us\n",
                    api.name, median(half_trips) * 1e6);
      out << line;
      out.flush();
    }
  }
  world.barrier("hvd-conformance.bench.end", std::chrono::minutes(5));
}

}  // namespace hvd_conformance
