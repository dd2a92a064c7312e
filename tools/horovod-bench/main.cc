// horovod-bench: times one collective over a range of sizes on every rank
// of a job, at the collective layer or through the runtime, optionally next
// to Open MPI's. See options.cc for the command line.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>

#include "collective_layer.h"
#include "common/error.h"
#include "effective_config.h"
#include "gloo_peer.h"
#include "measure.h"
#include "mpi_peer.h"
#include "options.h"
#include "plot.h"
#include "report.h"
#include "runtime_layer.h"
#include "step_bench.h"
#include "sweep.h"

namespace hvd_bench {
namespace {

// This process's rank as the launcher gave it, for messages before the
// bootstrap has run; -1 when unknown.
int rank_hint() {
  for (const char* name :
       {"HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    const char* value = std::getenv(name);
    if (value && *value) return std::atoi(value);
  }
  return -1;
}

void print_error(int rank, const std::string& message) {
  std::fflush(stdout);
  if (rank >= 0) {
    std::fprintf(stderr, "horovod-bench: rank %d: %s\n", rank, message.c_str());
  } else {
    std::fprintf(stderr, "horovod-bench: %s\n", message.c_str());
  }
  std::fflush(stderr);
}

// The reducers one row each: every loaded one under --sweep, else the
// planner's choice ("").
std::vector<std::string> row_reducers(const Options& o, Layer& ours) {
  if (!o.sweep) return {""};
  auto* collective = dynamic_cast<CollectiveLayer*>(&ours);
  if (!collective)
    throw hvd::Error(HVD_ERR_CONFIG, "--sweep needs --layer collective");
  return collective->reducer_names();
}

void use(Layer& ours, const std::string& reducer) {
  if (auto* collective = dynamic_cast<CollectiveLayer*>(&ours)) {
    collective->use_reducer(reducer);
  }
}

void bench(const Options& o, const EffectiveConfig& config, Layer& ours,
           Layer* peer) {
  const std::vector<Shape> shapes =
      shapes_between(o.collective, o.dtype, ours.size(), o.min_bytes,
                     o.max_bytes, o.step_factor);
  size_t send_bytes = 0, recv_bytes = 0;
  for (const Shape& s : shapes) {
    send_bytes = std::max(send_bytes, s.send_count * s.element_bytes);
    recv_bytes = std::max(recv_bytes, s.recv_count * s.element_bytes);
  }
  Workload workload(send_bytes, recv_bytes);
  const bool printing = ours.rank() == 0;
  const std::vector<std::string> reducers = row_reducers(o, ours);

  Report report(o, printing);
  const std::string title =
      std::string("horovod-bench: ") + collective_name(o.collective) + ", " +
      dtype_label(o.dtype) + ", " + std::to_string(ours.size()) + " rank(s), " +
      size_text(o.min_bytes) + " to " + size_text(o.max_bytes) + " (x" +
      std::to_string(o.step_factor) + "), iters " + std::to_string(o.iters) +
      ", warmup " + std::to_string(o.warmup);
  std::vector<std::string> lines = {title, ours.describe(),
                                    "config: " + config.origin()};
  if (peer) lines.push_back("peer: " + peer->describe());
  if (o.sweep) {
    std::string names;
    for (const std::string& r : reducers)
      names += (names.empty() ? "" : ", ") + r;
    lines.push_back("sweep: every size with each of " + names +
                    " (a reducer that does not offer a size has no row)");
  }
  lines.push_back(
      "time: median (min) over the iterations of the slowest rank's time");
  if (peer) {
    lines.push_back("ours/" + o.peer + ": our bus bandwidth over " + o.peer +
                    "'s (above 1: faster)");
  }
  report.header(lines);

  std::unique_ptr<Plot> plot;
  if (printing && !o.plot_path.empty()) {
    plot = std::make_unique<Plot>(o.plot_path, title + "\n" + ours.describe());
  }
  Sweep sweep;
  for (const Shape& shape : shapes) {
    std::optional<Measurement> pm;
    if (peer) {
      pm = measure(*peer, shape, workload, o);
      if (plot) plot->add(shape.bytes(), o.peer, pm->median_s, pm->busbw_gbs);
    }
    for (const std::string& reducer : reducers) {
      use(ours, reducer);
      Measurement m;
      try {
        m = measure(ours, shape, workload, o);
      } catch (const hvd::Error& e) {
        // Every rank decides the same: a reducer that does not offer this
        // size is left out of the sweep.
        if (!o.sweep || e.status() != HVD_ERR_UNSUPPORTED) throw;
        continue;
      }
      report.row(shape, m, pm);
      if (o.sweep) sweep.add(shape.bytes(), m.algorithm, m.median_s);
      if (plot) {
        plot->add(shape.bytes(), o.sweep ? m.algorithm : "horovod", m.median_s,
                  m.busbw_gbs);
      }
    }
  }
  report.footer();
  if (printing && o.sweep) sweep.print(collective_name(o.collective), stdout);
  ours.barrier();
  if (peer) peer->barrier();
  if (plot) plot->draw();
}

int run(const Options& o) {
  int rank = rank_hint();
  // MPI first: its MPI_Init and our PMIx bootstrap share the launcher.
  std::unique_ptr<Layer> peer;
  const bool mpi_peer = o.peer == "mpi" || o.peer == "mpi-nb";
  if (mpi_peer) peer = make_mpi_peer(o.collective, o.peer == "mpi-nb");
  EffectiveConfig config(o);
  std::unique_ptr<Layer> ours;
  if (o.layer == LayerKind::kCollective) {
    ours = std::make_unique<CollectiveLayer>(config.path(), o.op_timeout);
  } else {
    ours = std::make_unique<RuntimeLayer>(config.path(), o.op_timeout);
  }
  rank = ours->rank();
  try {
    // Gloo's ranks meet after ours, which gave them rank and size.
    if (o.peer == "gloo") {
      peer = make_gloo_peer(o.collective, ours->rank(), ours->size());
    }
    if (peer && mpi_peer &&
        (peer->rank() != ours->rank() || peer->size() != ours->size())) {
      throw hvd::Error(
          HVD_ERR_CONFIG,
          "MPI sees rank " + std::to_string(peer->rank()) + " of " +
              std::to_string(peer->size()) + ", horovod rank " +
              std::to_string(ours->rank()) + " of " +
              std::to_string(ours->size()) +
              " (was the job started by mpirun with the pmix bootstrap?)");
    }
    if (!o.step.empty()) {
      bench_step(o, static_cast<RuntimeLayer&>(*ours), config.path());
    } else {
      bench(o, config, *ours, peer.get());
    }
  } catch (const std::exception& e) {
    // Other ranks may be gone or stuck: leave without the graceful
    // teardown, which would wait for them.
    print_error(rank, e.what());
    config.remove();
    std::_Exit(1);
  }
  return 0;
}

}  // namespace
}  // namespace hvd_bench

int main(int argc, char** argv) {
  using namespace hvd_bench;
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "horovod-bench: %s (see horovod-bench --help)\n",
                 e.what());
    return 2;
  }
  if (options.help) {
    std::fputs(usage_text().c_str(), stdout);
    return 0;
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    print_error(rank_hint(), e.what());
    return 1;
  }
}
