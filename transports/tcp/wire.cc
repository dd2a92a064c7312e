#include "wire.h"

#include "addresses.h"
#include "horovod/abi.h"

namespace hvd_tcp {

std::string hello_problem(const Hello& h) {
  if (h.magic != kHelloMagic) return "not a horovod tcp hello";
  if (h.version != kProtocolVersion)
    return "protocol version " + std::to_string(h.version) + ", this rank " +
           "speaks " + std::to_string(kProtocolVersion);
  if (h.stream_count == 0 || h.stream_count > kMaxStreams)
    return std::to_string(h.stream_count) + " streams (1 to " +
           std::to_string(kMaxStreams) + ")";
  if (h.stream_index >= h.stream_count)
    return "stream " + std::to_string(h.stream_index) + " of " +
           std::to_string(h.stream_count);
  if (h.rank < 0) return "rank " + std::to_string(h.rank);
  return "";
}

std::string ack_problem(const Ack& a) {
  if (a.magic != kHelloMagic) return "not a horovod tcp listener";
  if (a.status > HVD_AGAIN || a.status < HVD_ERR_SHUT_DOWN)
    return "an unknown status " + std::to_string(a.status);
  if (a.rank < 0) return "rank " + std::to_string(a.rank);
  return "";
}

std::string header_problem(const FrameHeader& frame, uint32_t streams,
                           uint32_t expect_seq, uint64_t* piece) {
  if (frame.length > kMaxMessageBytes)
    return "a message of " + std::to_string(frame.length) +
           " bytes (at most " + std::to_string(kMaxMessageBytes) + ")";
  if (frame.parts == 0 || frame.seq != expect_seq)
    return "message " + std::to_string(frame.seq) + " where " +
           std::to_string(expect_seq) + " was due";
  *piece = frame.length;
  if (frame.parts > 1) {
    if (streams == 0 || frame.parts > streams || frame.length == 0)
      return "a message of " + std::to_string(frame.length) + " bytes in " +
             std::to_string(frame.parts) + " parts";
    *piece = part_bytes(frame.length, streams);
    uint64_t parts = (frame.length + *piece - 1) / *piece;
    if (frame.parts != parts)
      return "a message of " + std::to_string(frame.length) + " bytes in " +
             std::to_string(frame.parts) + " parts";
  }
  return "";
}

}  // namespace hvd_tcp
