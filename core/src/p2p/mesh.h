// The connection mesh: one connection from this rank to every other, built
// at init. A peer on this host (Bootstrap::layout().host_of) is reached over
// transport.intra, others over transport.inter; only the transports this
// rank needs are loaded (the same one serves both when both keys name the
// same list). Each rank listens, the listen handles travel through one
// bootstrap allgather, then every rank connects to the ranks below it and
// accepts the ranks above it, with the world epoch in every handshake, and
// drives conn_test until all are up or runtime.start_timeout has passed.
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
