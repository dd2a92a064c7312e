// Checks of what a peer sends on a tcp connection, kept free of sockets so
// they can be tested and fuzzed alone: each returns why the bytes are
// refused, or "" when they are acceptable.
#pragma once

#include <cstdint>
#include <string>

#include "protocol.h"

namespace hvd_tcp {

// The largest message a FrameHeader may announce. Larger is a protocol
// error: the length decides an allocation and the parts' arithmetic.
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 40;

// A Hello opening one stream of a connection.
std::string hello_problem(const Hello& hello);

// The acceptor's Ack to our Hello; its status must be one we know.
std::string ack_problem(const Ack& ack);

// A message's header on stream 0, on a connection of `streams` streams that
// expects message number `expect_seq`. On success *piece is the size of each
// part but the last.
std::string header_problem(const FrameHeader& frame, uint32_t streams,
                           uint32_t expect_seq, uint64_t* piece);

}  // namespace hvd_tcp
