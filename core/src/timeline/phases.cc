#include "timeline/phases.h"

namespace hvd::timeline {
namespace {

const char* const kOps[HVD_COLL_COUNT] = {
    "ALLREDUCE",     "ALLGATHER", "BROADCAST", "ALLTOALL",
    "REDUCESCATTER", "BARRIER",   "JOIN"};
const char* const kNegotiate[HVD_COLL_COUNT] = {
    "NEGOTIATE_ALLREDUCE", "NEGOTIATE_ALLGATHER",     "NEGOTIATE_BROADCAST",
    "NEGOTIATE_ALLTOALL",  "NEGOTIATE_REDUCESCATTER", "NEGOTIATE_BARRIER",
    "NEGOTIATE_JOIN"};

}  // namespace

const char* op_phase(hvd_collective c) {
  return c >= 0 && c < HVD_COLL_COUNT ? kOps[c] : "COLLECTIVE";
}

const char* negotiate_phase(hvd_collective c) {
  return c >= 0 && c < HVD_COLL_COUNT ? kNegotiate[c] : "NEGOTIATE";
}

}  // namespace hvd::timeline
