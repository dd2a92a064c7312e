// The ofi transport's provider-dependent decisions (transports/ofi/
// endpoint_plan.h) for recorded capability sets of efa, verbs;ofi_rxm,
// tcp;ofi_rxm and shm: the code paths the providers this machine lacks
// would take.
#include <gtest/gtest.h>

#include <string>

#include "horovod/abi.h"
#include "ofi/endpoint_plan.h"
#include "ofi_fixtures.h"

namespace {

using hvd_ofi::EndpointPlan;
using hvd_ofi::PlanInput;
using hvd_ofi_test::Fixture;
using hvd_ofi_test::make_info;

EndpointPlan plan_for(const Fixture& f, const PlanInput& input = {}) {
  auto info = make_info(f);
  EXPECT_TRUE(info);
  return hvd_ofi::plan_endpoint(*info, input);
}

constexpr uint32_t kHostOnly = HVD_MEM_BIT(HVD_MEM_HOST);
constexpr uint64_t kUnlimitedMessage = uint64_t{1} << 62;

TEST(OfiPlan, EfaWithoutMrLocalRegistersNothingForHostMemory) {
  EndpointPlan p = plan_for(hvd_ofi_test::kEfa);
  ASSERT_EQ(p.refusal, "");
  EXPECT_FALSE(p.register_local);
  EXPECT_TRUE(p.provider_keys);
  EXPECT_TRUE(p.virtual_addresses);
  EXPECT_TRUE(p.allocated_only);
  EXPECT_FALSE(p.bind_to_endpoint);
  EXPECT_TRUE(p.register_device);  // FI_MR_HMEM
  EXPECT_EQ(p.context_bytes, 0u);
  EXPECT_FALSE(p.manual_progress);
}

TEST(OfiPlan, EfaOrderedInjectsUpToItsInjectSize) {
  EndpointPlan p = plan_for(hvd_ofi_test::kEfa);
  EXPECT_TRUE(p.ordered);
  EXPECT_FALSE(p.one_send_per_tag);
  EXPECT_EQ(p.send_flags, 0u);
  EXPECT_EQ(p.inject_bytes, 4096u);
  EXPECT_EQ(p.max_message_bytes, kUnlimitedMessage);
  EXPECT_EQ(p.tag_bits, 64u);  // 0xaaaa...: the top bit is 63
  EXPECT_EQ(p.user_tag_bits, 48u);
  EXPECT_EQ(p.max_requests, 1024u);         // ours, under tx size 4096
  EXPECT_EQ(p.max_posted_receives, 8192u);  // rx size
  EXPECT_EQ(p.control_receives, 32u);
}

// fi_info -v never shows FI_HMEM: it is a primary capability, answered only
// when asked for (https://github.com/ofiwg/libfabric/pull/6339). The
// transport asks first; efa then answers with it.
TEST(OfiPlan, EfaWithHmemDeclaresCudaMemoryWhereThereAreGpus) {
  PlanInput gpus;
  gpus.device_kinds = HVD_MEM_BIT(HVD_MEM_CUDA);
  EXPECT_EQ(plan_for(hvd_ofi_test::kEfa, gpus).mem_kinds, kHostOnly);
  Fixture with_hmem = hvd_ofi_test::kEfa;
  with_hmem.caps |= FI_HMEM;
  EndpointPlan p = plan_for(with_hmem, gpus);
  EXPECT_EQ(p.mem_kinds, kHostOnly | HVD_MEM_BIT(HVD_MEM_CUDA));
  EXPECT_TRUE(p.register_device);
  EXPECT_EQ(plan_for(with_hmem).mem_kinds, kHostOnly);  // no GPU here
}

TEST(OfiPlan, EfaWithMrLocalRegistersEveryTransfer) {
  EndpointPlan p = plan_for(hvd_ofi_test::kEfaLocalUnordered);
  ASSERT_EQ(p.refusal, "");
  EXPECT_TRUE(p.register_local);
  EXPECT_TRUE(p.provider_keys);
}

TEST(OfiPlan, WithoutSendAfterSendOneSendPerTagAndNoInject) {
  EndpointPlan p = plan_for(hvd_ofi_test::kEfaLocalUnordered);
  EXPECT_FALSE(p.ordered);
  EXPECT_TRUE(p.one_send_per_tag);
  EXPECT_EQ(p.send_flags & FI_TRANSMIT_COMPLETE, FI_TRANSMIT_COMPLETE);
  EXPECT_EQ(p.send_flags & FI_COMPLETION, FI_COMPLETION);
  EXPECT_EQ(p.inject_bytes, 0u);  // inject_size is 4096, but unordered
}

TEST(OfiPlan, OrderingOnOneSideOnlyIsNoOrdering) {
  Fixture tx_only = hvd_ofi_test::kEfa;
  tx_only.rx_msg_order = 0;
  EXPECT_FALSE(plan_for(tx_only).ordered);
}

TEST(OfiPlan, ModeTheTransportDoesNotProvideIsRefusedByName) {
  auto info =
      hvd_ofi_test::make_info_unnarrowed(hvd_ofi_test::kEfaLocalUnordered);
  EndpointPlan p = hvd_ofi::plan_endpoint(*info, {});
  EXPECT_NE(p.refusal.find("FI_MSG_PREFIX"), std::string::npos) << p.refusal;
  EXPECT_NE(p.refusal.find("efa"), std::string::npos) << p.refusal;
}

TEST(OfiPlan, ContextModesAreHonoured) {
  Fixture direct = hvd_ofi_test::kEfa;  // efa-direct asks for FI_CONTEXT2
  direct.mode = FI_CONTEXT2;
  EXPECT_EQ(plan_for(direct).context_bytes, sizeof(fi_context2));
  direct.mode = FI_CONTEXT;
  EXPECT_EQ(plan_for(direct).context_bytes, sizeof(fi_context));
}

TEST(OfiPlan, DatagramEndpointIsRefusedAndSkippedInTheList) {
  auto dgram = make_info(hvd_ofi_test::kEfaDgram);
  EndpointPlan p = hvd_ofi::plan_endpoint(*dgram, {});
  EXPECT_NE(p.refusal.find("not a reliable-datagram endpoint"),
            std::string::npos)
      << p.refusal;

  std::string why;
  EndpointPlan chosen;
  EXPECT_EQ(hvd_ofi::choose_endpoint(dgram.get(), {}, &chosen, &why), nullptr);
  EXPECT_NE(why.find("FI_EP_DGRAM"), std::string::npos) << why;

  auto rdm = make_info(hvd_ofi_test::kEfa);
  dgram->next = rdm.get();
  EXPECT_EQ(hvd_ofi::choose_endpoint(dgram.get(), {}, &chosen, &why),
            rdm.get());
  EXPECT_EQ(chosen.refusal, "");
  EXPECT_EQ(chosen.inject_bytes, 4096u);
  dgram->next = nullptr;
}

TEST(OfiPlan, VerbsRxmRegistersLocallyWithLegacyBasicBits) {
  EndpointPlan p = plan_for(hvd_ofi_test::kVerbsRxm);
  ASSERT_EQ(p.refusal, "");
  EXPECT_TRUE(p.register_local);
  // FI_MR_BASIC stands for VIRT_ADDR | ALLOCATED | PROV_KEY.
  EXPECT_TRUE(p.provider_keys);
  EXPECT_TRUE(p.virtual_addresses);
  EXPECT_TRUE(p.allocated_only);
  EXPECT_TRUE(p.manual_progress);
  EXPECT_TRUE(p.ordered);
  EXPECT_EQ(p.inject_bytes, 16320u);
  EXPECT_EQ(p.tag_bits, 63u);  // 0x5555...: the top bit is 62
  EXPECT_EQ(p.user_tag_bits, 47u);
  EXPECT_EQ(p.mem_kinds, kHostOnly);
}

TEST(OfiPlan, QueueDepthsFollowTheProvider) {
  PlanInput deep;
  deep.max_requests = 4096;
  EndpointPlan p = plan_for(hvd_ofi_test::kVerbsRxm, deep);
  EXPECT_EQ(p.max_requests, 1024u);  // tx size
  EXPECT_EQ(p.max_posted_receives, 1024u);

  Fixture shallow = hvd_ofi_test::kVerbsRxm;
  shallow.rx_size = 64;
  p = plan_for(shallow);
  EXPECT_EQ(p.max_posted_receives, 64u);
  EXPECT_EQ(p.control_receives, 8u);  // an eighth, the rest is for data

  shallow.rx_size = 1;
  EXPECT_NE(plan_for(shallow).refusal.find("receive queue"), std::string::npos);
}

TEST(OfiPlan, TcpRxmAsOnThisMachine) {
  EndpointPlan p = plan_for(hvd_ofi_test::kTcpRxm);
  ASSERT_EQ(p.refusal, "");
  EXPECT_FALSE(p.register_local);
  EXPECT_FALSE(p.provider_keys);
  EXPECT_TRUE(p.ordered);
  EXPECT_EQ(p.inject_bytes, 64u);
  EXPECT_EQ(p.max_requests, 1024u);
  EXPECT_EQ(p.max_posted_receives, 2048u);
  EXPECT_EQ(p.user_tag_bits, 48u);
  EXPECT_TRUE(p.manual_progress);
  EXPECT_EQ(p.mem_kinds, kHostOnly);
}

TEST(OfiPlan, ShmAsOnThisMachine) {
  EndpointPlan p = plan_for(hvd_ofi_test::kShm);
  ASSERT_EQ(p.refusal, "");
  EXPECT_FALSE(p.register_local);
  EXPECT_TRUE(p.ordered);
  EXPECT_EQ(p.inject_bytes, 4096u);
  EXPECT_EQ(p.max_posted_receives, 1024u);
  EXPECT_EQ(p.max_requests, 1024u);
}

TEST(OfiPlan, SerializeSendsOnAnOrderedProvider) {
  PlanInput serialize;
  serialize.trust_send_order = false;
  EndpointPlan p = plan_for(hvd_ofi_test::kTcpRxm, serialize);
  EXPECT_FALSE(p.ordered);
  EXPECT_TRUE(p.one_send_per_tag);
  EXPECT_EQ(p.inject_bytes, 0u);
}

TEST(OfiPlan, RegisterAlwaysOnAProviderWithoutMrLocal) {
  PlanInput always;
  always.register_always = true;
  EXPECT_FALSE(plan_for(hvd_ofi_test::kTcpRxm).register_local);
  EXPECT_TRUE(plan_for(hvd_ofi_test::kTcpRxm, always).register_local);
}

TEST(OfiPlan, MessagesAboveTheLimitAreLeftToTheCoreToSplit) {
  EXPECT_EQ(plan_for(hvd_ofi_test::kVerbsRxm).max_message_bytes,
            kUnlimitedMessage);
  PlanInput capped;
  capped.max_message_bytes = 64 * 1024;
  EXPECT_EQ(plan_for(hvd_ofi_test::kVerbsRxm, capped).max_message_bytes,
            64u * 1024);
  // A provider limit below the cap wins.
  Fixture small = hvd_ofi_test::kShm;
  small.max_msg_size = 8928;
  EXPECT_EQ(plan_for(small, capped).max_message_bytes, 8928u);
  EXPECT_EQ(plan_for(small).max_message_bytes, 8928u);
}

TEST(OfiPlan, EndpointBoundRegistrations) {
  Fixture bound = hvd_ofi_test::kTcpRxm;
  bound.mr_mode = FI_MR_ENDPOINT | FI_MR_PROV_KEY;
  EndpointPlan p = plan_for(bound);
  EXPECT_TRUE(p.bind_to_endpoint);
  EXPECT_FALSE(plan_for(hvd_ofi_test::kEfa).bind_to_endpoint);
}

TEST(OfiPlan, TooFewTagBitsIsRefused) {
  Fixture narrow = hvd_ofi_test::kTcpRxm;
  narrow.mem_tag_format = 0xffffff;  // 24 bits: 16 reserved, 8 left
  EXPECT_EQ(plan_for(narrow).refusal, "");
  EXPECT_EQ(plan_for(narrow).user_tag_bits, 8u);
  narrow.mem_tag_format = 0x7fffff;
  EXPECT_NE(plan_for(narrow).refusal.find("23 tag bits"), std::string::npos);
}

TEST(OfiPlan, NoTaggedMessagesIsRefused) {
  Fixture untagged = hvd_ofi_test::kTcpRxm;
  untagged.caps &= ~FI_TAGGED;
  EXPECT_NE(plan_for(untagged).refusal.find("FI_TAGGED"), std::string::npos);
}

TEST(OfiPlan, DescribeSaysWhatWasChosen) {
  auto info = make_info(hvd_ofi_test::kEfaLocalUnordered);
  std::string line =
      hvd_ofi::describe(*info, hvd_ofi::plan_endpoint(*info, {}));
  EXPECT_NE(line.find("provider efa"), std::string::npos) << line;
  EXPECT_NE(line.find("mr local+prov_key"), std::string::npos) << line;
  EXPECT_NE(line.find("one send per tag"), std::string::npos) << line;
}

}  // namespace
