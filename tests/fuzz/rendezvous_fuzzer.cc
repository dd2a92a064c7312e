// What a rank reads from the rendezvous service: a response frame's length
// prefix, the frame (checked against the job's secret and the connection's
// nonce), then the fields of each op's answer. The first input byte chooses
// whether the frame carries a valid tag, so the decoders behind the
// authentication are reached as well as the check itself.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "bootstrap/rendezvous_protocol.h"
#include "common/error.h"

using namespace hvd::rendezvous;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool sign = data[0] & 1;
  const uint32_t ranks = 1 + (data[0] >> 1);  // 1..128
  ++data;
  --size;

  static const std::vector<uint8_t> secret(32, 0x5a);
  static const std::vector<uint8_t> nonce(kNonceBytes, 0x17);
  const uint64_t seq = 3;
  const Op op = kAllgather;

  // The frame: a tag, then the body; signed, the tag is computed over the
  // fuzzer's body so the frame passes as the service's own.
  std::vector<uint8_t> frame(kTagBytes + size, 0);
  if (size > 0) std::copy(data, data + size, frame.begin() + kTagBytes);
  if (sign) {
    std::vector<uint8_t> body(frame.begin() + kTagBytes, frame.end());
    auto tag = frame_tag(secret, kFromServer, nonce, body);
    std::copy(tag.begin(), tag.end(), frame.begin());
  }
  try {
    check_response_length(static_cast<uint32_t>(frame.size()), "fuzz");
    Response response =
        open_response(frame.data(), frame.size(), secret, nonce, seq, op,
                      "fuzz");
    try {
      (void)decode_allgather(response.fields, ranks, "fuzz");
    } catch (const hvd::Error& e) {
      if (e.status() != HVD_ERR_PEER_FAILED) std::abort();
    }
    try {
      (void)decode_missing(response.fields, ranks, "fuzz");
    } catch (const hvd::Error& e) {
      if (e.status() != HVD_ERR_PEER_FAILED) std::abort();
    }
    Reader value(response.fields.data(), response.fields.size());
    (void)value.blob();  // a GET's answer
  } catch (const hvd::Error& e) {
    if (e.status() != HVD_ERR_PEER_FAILED) std::abort();
  }
  return 0;
}
