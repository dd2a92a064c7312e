// The conformance cases. Each runs on every rank; it throws CaseFailure
// (fail_case, check) when the transport does something wrong and CaseSkip
// when the case does not apply to it.
#pragma once

#include "session.h"

namespace hvd_conformance {

void case_properties(CaseContext& ctx);
void case_connect_before_accept(CaseContext& ctx);
void case_accept_before_connect(CaseContext& ctx);
void case_epoch_mismatch(CaseContext& ctx);
void case_sizes(CaseContext& ctx);
void case_many_in_flight(CaseContext& ctx);
void case_tag_matching(CaseContext& ctx);
void case_truncation(CaseContext& ctx);
void case_back_pressure(CaseContext& ctx);
void case_wait_fd(CaseContext& ctx);
void case_abort(CaseContext& ctx);
void case_one_sided(CaseContext& ctx);
void case_peer_death(CaseContext& ctx);
// On request: the last rank cuts its own links through the plugin's
// test-only fault hook; every request on them must name it.
void case_sever(CaseContext& ctx);

// Every pair exchanges one small message both ways and checks it.
void ping_all(Session& s, uint64_t tag);

// The tags the suite uses, spread over the transport's tag bits.
uint64_t spread_tag(const CaseContext& ctx, uint64_t i);

}  // namespace hvd_conformance
