// The connection mesh: one connection from this rank to every other, built
// at init. A peer on this host (Bootstrap::layout().host_of) is reached over
// transport.intra, others over transport.inter; only the transports this
// rank needs are loaded (the same one serves both when both keys name the
// same list). Each rank listens, the listen handles travel through one
// bootstrap allgather, then every rank connects to the ranks below it and
// accepts the ranks above it, with the world epoch in every handshake, and
// drives conn_test until all are up or runtime.start_timeout has passed.
//
// The same allgather carries each rank's [transport] gpu offer (gpu_scope.h)
// and CPU affinity (core_sharing.h). Where the process has CUDA devices it
// loads the first transport of transport.gpu that loads (a fallback is
// logged) and listens on it if it can; the job then has a gpu scope only
// if every rank opened the same one, and every pair is connected over it
// when every rank listens (nccl does not: it serves its collectives only).
// Every rank logs the outcome, or why there is none. Whether this rank
// shares cores with others of its host sets Engine::set_oversubscribed.
//
// Collective over the world. Throws hvd::Error naming the transport and the
// peers still missing (HVD_ERR_TIMEOUT), or the transport's own failure.
#pragma once

#include <chrono>

namespace hvd {
class Bootstrap;
class Config;
class PluginLoader;
}  // namespace hvd

namespace hvd::p2p {

class Engine;

void build_mesh(Engine& engine, const PluginLoader& loader,
                const Config& config, Bootstrap& bootstrap,
                std::chrono::nanoseconds timeout);

}  // namespace hvd::p2p
