#include "config/schema.h"

#include <cctype>
#include <string>

#include "config/suggest.h"

namespace hvd {

namespace {

using T = ValueType;
using E = EnvForm;

constexpr bool kShared = true;
constexpr bool kPerRank = false;
constexpr bool kCore = false;
constexpr bool kPlugin = true;

}  // namespace

const std::vector<KeySpec>& schema() {
  static const std::vector<KeySpec> keys = {
      {"runtime.fusion_threshold", T::Bytes, R"("128MiB")",
       "HOROVOD_FUSION_THRESHOLD", E::Native, kShared, kCore, "",
       "Tensors ready in the same cycle are fused into one buffer of up to "
       "this size before they are reduced; 0 turns fusion off."},
      {"runtime.cycle_time", T::Duration, R"("1ms")", "HOROVOD_CYCLE_TIME",
       E::Milliseconds, kShared, kCore, "",
       "How long the background thread gathers ready tensors before each "
       "negotiation round. Rounds that negotiate nothing come ever less "
       "often, up to 16 ms apart, so an idle or waiting rank sleeps."},
      {"runtime.cache_capacity", T::Int, "1024", "HOROVOD_CACHE_CAPACITY",
       E::Native, kShared, kCore, "",
       "Responses remembered by the response cache, so tensors seen before "
       "skip full negotiation; 0 turns the cache off."},
      {"runtime.peer_timeout", T::Duration, R"("10s")",
       "HOROVOD_PEER_TIMEOUT_SECONDS", E::Native, kShared, kCore, "",
       "A rank not heard from for this long is declared failed, and every "
       "other rank stops with an error naming it."},
      {"runtime.heartbeat_interval", T::Duration, R"("1s")", "", E::Native,
       kShared, kCore, "",
       "How often an idle rank tells its neighbours on the control plane "
       "that it is alive."},
      {"runtime.start_timeout", T::Duration, R"("30s")",
       "HOROVOD_START_TIMEOUT", E::Native, kPerRank, kCore, "",
       "How long initialisation waits for every rank to join."},
      {"runtime.spin_time", T::Duration, R"("50us")", "HOROVOD_SPIN_TIME_US",
       E::Microseconds, kPerRank, kCore, "",
       "How long a waiting thread polls before it sleeps on a file "
       "descriptor."},
      {"runtime.bind_to_core", T::Bool, "true", "HOROVOD_BIND_TO_CORE",
       E::Native, kPerRank, kCore, "",
       "Where this host's ranks are at least as many as the cores they may "
       "run on, bind each rank's initialising thread, and so its background "
       "thread, to one of those cores by local rank, as mpirun --bind-to "
       "core does (left free, the scheduler may stack several ranks' "
       "threads on one core); hvd_shutdown on that thread unbinds it. Not "
       "over a transport that may run threads of its own (gloo, nccl, ucx, "
       "ofi, mpi, any plugin built before ABI 1.3): they would inherit the "
       "one core."},
      {"runtime.autotune", T::Bool, "false", "HOROVOD_AUTOTUNE", E::Native,
       kShared, kCore, "",
       "Tune the fusion threshold and cycle time while training runs."},
      {"runtime.autotune_log", T::String, R"("")", "HOROVOD_AUTOTUNE_LOG",
       E::Native, kPerRank, kCore, "",
       "CSV file recording what the autotuner tried; \"\": none."},
      {"runtime.dynamic_process_sets", T::Bool, "false",
       "HOROVOD_DYNAMIC_PROCESS_SETS", E::Native, kShared, kCore, "",
       "Allow process sets to be added and removed after initialisation."},
      {"runtime.hierarchical_allreduce", T::Bool, "false",
       "HOROVOD_HIERARCHICAL_ALLREDUCE", E::Native, kShared, kCore, "",
       "Allreduce in three steps: reduce-scatter inside each host over the "
       "intra transport, allreduce across hosts over the inter transport, "
       "allgather inside each host."},
      {"runtime.hierarchical_allgather", T::Bool, "false",
       "HOROVOD_HIERARCHICAL_ALLGATHER", E::Native, kShared, kCore, "",
       "Allgather inside each host first, then across hosts."},

      {"timeline.path", T::String, R"("")", "HOROVOD_TIMELINE", E::Native,
       kPerRank, kCore, "",
       "Chrome-trace file of every tensor's phases (chrome://tracing, "
       "Perfetto), written by rank 0; \"\": no timeline; \"DYNAMIC\": none "
       "until hvd_start_timeline."},
      {"timeline.mark_cycles", T::Bool, "false", "HOROVOD_TIMELINE_MARK_CYCLES",
       E::Native, kPerRank, kCore, "",
       "Mark the start of every background cycle in the timeline."},

      {"stall_check.enabled", T::Bool, "true", "HOROVOD_STALL_CHECK_DISABLE",
       E::Inverted, kShared, kCore, "",
       "Warn about tensors that some ranks submitted and others have not."},
      {"stall_check.warning_time", T::Duration, R"("60s")",
       "HOROVOD_STALL_CHECK_TIME_SECONDS", E::Native, kShared, kCore, "",
       "How long a tensor may wait for the other ranks before the warning."},
      {"stall_check.shutdown_time", T::Duration, R"("30min")",
       "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", E::Native, kShared, kCore, "",
       "How long a stalled op may wait before the job stops on every rank "
       "with an error naming it; \"0s\": never. The default ends a "
       "deadlocked job within the half hour yet outlasts any one rank's "
       "long evaluation or checkpoint."},

      {"flight_recorder.enabled", T::Bool, "true", "HOROVOD_FLIGHT_RECORDER",
       E::Native, kPerRank, kCore, "",
       "Keep each rank's last collectives per process set (name, op, size, "
       "state, times, reducer, transport) and dump them to the log and to "
       "a JSON file in [log] dir on a stall warning, a failure, SIGUSR1 or "
       "a fatal signal; horovodrun summarises the dumps after the job."},
      {"flight_recorder.entries", T::Int, "64",
       "HOROVOD_FLIGHT_RECORDER_ENTRIES", E::Native, kPerRank, kCore, "",
       "Collectives remembered per process set, 1 to 65536 (rounded up to "
       "a power of two; 128 bytes each)."},

      {"log.level", T::String, R"("warning")", "HOROVOD_LOG_LEVEL", E::Native,
       kPerRank, kCore, "trace|debug|info|warning|error|fatal",
       "Least severe messages written to stderr: trace, debug, info, "
       "warning, error or fatal."},
      {"log.hide_time", T::Bool, "false", "HOROVOD_LOG_HIDE_TIME", E::Native,
       kPerRank, kCore, "", "Leave the time stamp out of log lines."},
      {"log.dir", T::String, R"("")", "HOROVOD_LOG_DIR", E::Native, kPerRank,
       kCore, "",
       "Folder for the job's diagnostic files (flight recorder dumps). "
       "horovodrun gives each job one; \"\": $TMPDIR/horovod-logs-<uid>."},

      {"plugins.search_path", T::Strings, "[]", "HOROVOD_PLUGIN_PATH",
       E::ColonList, kPerRank, kCore, "",
       "Folders searched for libhorovod-<kind>-<name>.so before the "
       "installation's own lib/horovod/."},

      {"bootstrap.backend", T::String, R"("auto")", "", E::Native, kShared,
       kCore, "auto|rendezvous|pmix|single",
       "How ranks find each other: \"rendezvous\" (horovodrun's store), "
       "\"pmix\" (mpirun, srun), \"single\" (one process), or \"auto\" to "
       "choose from the environment."},

      {"transport.intra", T::Names, R"("shm")", "", E::Native, kShared, kCore,
       "",
       "Transport between ranks on the same host. A name, or a list of "
       "names tried in order: the first that loads is used and the "
       "fallback is logged."},
      {"transport.inter", T::Names, R"("tcp")", "HOROVOD_CPU_OPERATIONS",
       E::CommaList, kShared, kCore, "",
       "Transport between hosts (\"tcp\", \"ofi\", \"ucx\", \"mpi\", "
       "\"gloo\"). A name or a list, as for intra."},
      {"transport.gpu", T::Names, R"("nccl")", "", E::Native, kShared, kCore,
       "", "Transport for GPU memory. A name or a list, as for intra."},
      {"transport.gloo.timeout", T::Duration, R"("30s")",
       "HOROVOD_GLOO_TIMEOUT_SECONDS", E::Native, kShared, kPlugin, "",
       "How long the gloo transport waits for a peer."},
      {"transport.tcp.interfaces", T::Strings, R"(["eth0"])",
       "HOROVOD_NETWORK_INTERFACES", E::CommaList, kPerRank, kPlugin, "",
       "Network interfaces the tcp transport may use (horovodrun "
       "--network-interfaces)."},

      {"reducer.load", T::Strings,
       R"(["ring", "tree", "halving-doubling", "adasum", "native"])", "",
       E::Native, kShared, kCore, "",
       "Reducer plugins to load; the planner picks among them by their "
       "scores, unless rules below decide."},
  };
  return keys;
}

const std::vector<SectionSpec>& sections() {
  static const std::vector<SectionSpec> list = {
      {"runtime",
       "The background thread: fusion, negotiation, failure "
       "detection.",
       false},
      {"timeline", "A trace of every tensor's life, for chrome://tracing.",
       false},
      {"stall_check", "Tensors submitted by some ranks and not by others.",
       false},
      {"flight_recorder",
       "Each rank's last collectives, dumped when a job stalls or fails.",
       false},
      {"log", "Messages on stderr and the job's diagnostic files.", false},
      {"plugins", "Where plugins are found.", false},
      {"bootstrap", "How the ranks of a job find each other.", false},
      {"transport",
       "Data transports, chosen per memory kind and scope. A name resolves "
       "to libhorovod-transport-<name>.so on the search path; a name "
       "containing '/' is a path. Each transport reads its own table, "
       "[transport.<name>].",
       true},
      {"reducer",
       "Reduction algorithms. Each reducer reads its own table, "
       "[reducer.<name>].",
       true},
      {"adapter",
       "Framework bindings. Each reads its own table, "
       "[adapter.<name>].",
       true},
  };
  return list;
}

const std::vector<CollectiveSpec>& rule_collectives() {
  static const std::vector<CollectiveSpec> list = {
      {"allreduce", HVD_COLL_ALLREDUCE},
      {"allgather", HVD_COLL_ALLGATHER},
      {"broadcast", HVD_COLL_BROADCAST},
      {"alltoall", HVD_COLL_ALLTOALL},
      {"reducescatter", HVD_COLL_REDUCESCATTER},
  };
  return list;
}

const KeySpec* find_key(std::string_view key) {
  for (const KeySpec& spec : schema())
    if (spec.key == key) return &spec;
  return nullptr;
}

const SectionSpec* find_section(std::string_view name) {
  for (const SectionSpec& spec : sections())
    if (spec.name == name) return &spec;
  return nullptr;
}

const CollectiveSpec* find_rule_collective(std::string_view name) {
  for (const CollectiveSpec& spec : rule_collectives())
    if (spec.name == name) return &spec;
  return nullptr;
}

std::string env_description(const KeySpec& spec) {
  if (spec.env.empty()) return "";
  std::string text(spec.env);
  switch (spec.env_form) {
    case EnvForm::Milliseconds:
      return text + " (milliseconds)";
    case EnvForm::Microseconds:
      return text + " (microseconds)";
    case EnvForm::Inverted:
      return text + " (1 turns it off)";
    case EnvForm::ColonList:
      return text + " (colon-separated)";
    case EnvForm::CommaList:
      return text + " (comma-separated)";
    case EnvForm::Native:
      if (spec.type == ValueType::Bytes) return text + " (bytes)";
      if (spec.type == ValueType::Duration) return text + " (seconds)";
      return text;
  }
  return text;
}

std::string check_choice(const KeySpec& spec, std::string* text) {
  if (spec.choices.empty()) return "";
  std::string lower = *text;
  for (char& c : lower)
    c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> choices;
  std::string_view rest = spec.choices;
  while (!rest.empty()) {
    size_t bar = rest.find('|');
    choices.emplace_back(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? "" : rest.substr(bar + 1);
  }
  for (const std::string& c : choices) {
    if (c == lower) {
      *text = lower;
      return "";
    }
  }
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  return "unknown value " + toml_quote(*text) + "; one of " + list +
         did_you_mean(lower, choices);
}

}  // namespace hvd
