#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <numeric>

#include "fake_transport.h"
#include "p2p/engine.h"

namespace hvd::p2p {
namespace {

// Two engines (ranks 0 and 1) joined by one fake connection.
struct Pair {
  explicit Pair(FakeOptions options)
      : e0(0, 2, 0),
        e1(0 + 1, 2, 0),
        team0({0, 1}, 0, {0, 0}, 0, 0),
        team1({0, 1}, 1, {0, 0}, 0, 0) {
    t0 = fake_transport(options);
    t1 = fake_transport(options);
    Transport* a = e0.add_transport(std::make_unique<Transport>(
        "intra", "transport 'fake'", fake_transport_api(), t0, nullptr));
    Transport* b = e1.add_transport(std::make_unique<Transport>(
        "intra", "transport 'fake'", fake_transport_api(), t1, nullptr));
    hvd_conn_s *c0, *c1;
    fake_connect(t0, 0, t1, 1, &c0, &c1);
    e0.add_link(1, a, c0);
    e1.add_link(0, b, c1);
    e0.reset_context(&p0, &team0, 2, 41);
    e1.reset_context(&p1, &team1, 2, 41);
  }
  Engine e0, e1;
  Team team0, team1;
  hvd_transport_s *t0, *t1;
  hvd_p2p_s p0, p1;
};

// Tests a request until done (the fake completes as soon as data is there).
hvd_completion finish(const hvd_p2p_api* api, hvd_p2p* p, hvd_p2p_request* r) {
  hvd_completion c{};
  int32_t done = 0;
  for (int i = 0; i < 1000 && !done; ++i) {
    EXPECT_EQ(api->test(p, r, &done, &c), HVD_OK);
  }
  EXPECT_EQ(done, 1);
  return c;
}

TEST(P2pEngine, SendsWithComposedTags) {
  Pair pair(FakeOptions{});
  const hvd_p2p_api* api = Engine::api();
  EXPECT_EQ(api->team(&pair.p1)->rank, 1);
  EXPECT_EQ(api->team(&pair.p1)->size, 2);
  std::vector<int> out = {1, 2, 3}, in(3, 0);
  hvd_p2p_request *s, *r;
  ASSERT_EQ(api->isend(&pair.p0, 1, out.data(), 12, 7, &s), HVD_OK);
  ASSERT_EQ(api->irecv(&pair.p1, 0, in.data(), 12, 7, &r), HVD_OK);
  EXPECT_EQ(finish(api, &pair.p0, s).status, HVD_OK);
  hvd_completion c = finish(api, &pair.p1, r);
  EXPECT_EQ(c.status, HVD_OK);
  EXPECT_EQ(c.bytes, 12u);
  EXPECT_EQ(in, out);
  ASSERT_EQ(pair.t0->sent.size(), 1u);
  TagLayout layout(64);
  TagFields f = layout.decompose(pair.t0->sent[0].tag);
  EXPECT_EQ(f.process_set, 2u);
  EXPECT_EQ(f.sequence, 41u);
  EXPECT_EQ(f.step, 7u);
  EXPECT_EQ(f.subteam, 0u);
}

TEST(P2pEngine, SplitsMessagesAboveTheTransportsLimit) {
  FakeOptions options;
  options.max_message = 1000;
  options.again_every = 3;  // and survives back-pressure
  Pair pair(options);
  const hvd_p2p_api* api = Engine::api();
  std::vector<uint8_t> out(4500), in(4500, 0);
  std::iota(out.begin(), out.end(), 0);
  hvd_p2p_request *s, *r;
  ASSERT_EQ(api->isend(&pair.p0, 1, out.data(), out.size(), 1, &s), HVD_OK);
  ASSERT_EQ(api->irecv(&pair.p1, 0, in.data(), in.size(), 1, &r), HVD_OK);
  hvd_completion sc{}, rc{};
  int32_t sdone = 0, rdone = 0;
  for (int i = 0; i < 100 && !(sdone && rdone); ++i) {
    if (!sdone) api->test(&pair.p0, s, &sdone, &sc);
    if (!rdone) api->test(&pair.p1, r, &rdone, &rc);
  }
  ASSERT_TRUE(sdone && rdone);
  EXPECT_EQ(sc.bytes, 4500u);
  EXPECT_EQ(rc.bytes, 4500u);
  EXPECT_EQ(in, out);
  ASSERT_EQ(pair.t0->sent.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(pair.t0->sent[i].data.size(), 1000u);
  EXPECT_EQ(pair.t0->sent[4].data.size(), 500u);
}

TEST(P2pEngine, ZeroByteMessages) {
  Pair pair(FakeOptions{});
  const hvd_p2p_api* api = Engine::api();
  hvd_p2p_request *s, *r;
  ASSERT_EQ(api->isend(&pair.p0, 1, nullptr, 0, 3, &s), HVD_OK);
  ASSERT_EQ(api->irecv(&pair.p1, 0, nullptr, 0, 3, &r), HVD_OK);
  EXPECT_EQ(finish(api, &pair.p0, s).status, HVD_OK);
  EXPECT_EQ(finish(api, &pair.p1, r).bytes, 0u);
}

TEST(P2pEngine, SubteamsHaveTheirOwnTagsAndAreReused) {
  Pair pair(FakeOptions{});
  const hvd_p2p_api* api = Engine::api();
  int32_t members[] = {1, 0};  // reversed: rank 0 becomes sub-rank 1
  hvd_p2p *sub0, *sub1;
  ASSERT_EQ(api->subteam(&pair.p0, members, 2, &sub0), HVD_OK);
  ASSERT_EQ(api->subteam(&pair.p1, members, 2, &sub1), HVD_OK);
  EXPECT_EQ(api->team(sub0)->rank, 1);
  EXPECT_EQ(api->team(sub1)->rank, 0);
  int v = 5, w = 0;
  hvd_p2p_request *s, *r;
  ASSERT_EQ(api->isend(sub0, 0, &v, sizeof v, 9, &s), HVD_OK);
  ASSERT_EQ(api->irecv(sub1, 1, &w, sizeof w, 9, &r), HVD_OK);
  finish(api, sub0, s);
  finish(api, sub1, r);
  EXPECT_EQ(w, 5);
  TagLayout layout(64);
  EXPECT_EQ(layout.decompose(pair.t0->sent[0].tag).subteam, 1u);

  // The next task asking for the same members gets the same object.
  pair.e0.reset_context(&pair.p0, &pair.team0, 2, 42);
  hvd_p2p* again;
  ASSERT_EQ(api->subteam(&pair.p0, members, 2, &again), HVD_OK);
  EXPECT_EQ(again, sub0);
  int32_t self_only[] = {1};
  EXPECT_EQ(api->subteam(&pair.p0, self_only, 1, &again),
            HVD_ERR_INVALID_ARGUMENT);
}

TEST(P2pEngine, RejectsBadPeers) {
  Pair pair(FakeOptions{});
  const hvd_p2p_api* api = Engine::api();
  int v = 0;
  hvd_p2p_request* r;
  EXPECT_EQ(api->isend(&pair.p0, 0, &v, 4, 0, &r), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api->isend(&pair.p0, 2, &v, 4, 0, &r), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api->isend(&pair.p0, 1, &v, 4, 1 << 16, &r),
            HVD_ERR_INVALID_ARGUMENT);
}

TEST(P2pEngine, TruncationFailsAndReportsThePeer) {
  Pair pair(FakeOptions{});
  int reported = -1;
  pair.e1.set_failure_reporter(
      [&](int32_t peer, const std::string&) { reported = peer; });
  const hvd_p2p_api* api = Engine::api();
  std::vector<uint8_t> out(16), in(8);
  hvd_p2p_request *s, *r;
  ASSERT_EQ(api->isend(&pair.p0, 1, out.data(), 16, 0, &s), HVD_OK);
  ASSERT_EQ(api->irecv(&pair.p1, 0, in.data(), 8, 0, &r), HVD_OK);
  finish(api, &pair.p0, s);
  hvd_completion c = finish(api, &pair.p1, r);
  EXPECT_EQ(c.status, HVD_ERR_TRUNCATED);
  EXPECT_EQ(c.peer, 0);
  EXPECT_EQ(reported, 0);
  EXPECT_NE(pair.e1.last_error().find("rank 0"), std::string::npos);
}

// A refused post on rank 0's link to rank 1: its completion's peer, and
// the rank reported to the failure reporter (-1: none).
struct Refusal {
  hvd_completion completion;
  int reported = -1;
};
Refusal refused(Pair& pair, hvd_status refusal) {
  Refusal out;
  pair.e0.set_failure_reporter(
      [&](int32_t peer, const std::string&) { out.reported = peer; });
  pair.t0->refuse = refusal;
  const hvd_p2p_api* api = Engine::api();
  int v = 0;
  hvd_p2p_request* s;
  EXPECT_EQ(api->isend(&pair.p0, 1, &v, 4, 0, &s), HVD_OK);
  out.completion = finish(api, &pair.p0, s);
  EXPECT_EQ(out.completion.status, refusal);
  return out;
}

TEST(P2pEngine, ARefusalAfterThePeerFailedNamesThePeer) {
  Pair pair(FakeOptions{});
  Refusal r = refused(pair, HVD_ERR_PEER_FAILED);
  EXPECT_EQ(r.completion.peer, 1);
  EXPECT_EQ(r.reported, 1);
}

// The transport aborted itself (its own links were cut): what it refuses
// is this rank's doing, and the healthy peer is not reported.
TEST(P2pEngine, ARefusalOfATransportThatAbortedItselfNamesThisRank) {
  Pair pair(FakeOptions{});
  Refusal r = refused(pair, HVD_ERR_ABORTED);
  EXPECT_EQ(r.completion.peer, 0);
  EXPECT_EQ(r.reported, -1);
}

// Aborted by the engine, for a rank: that rank, and nothing reported.
TEST(P2pEngine, ARefusalAfterTheEngineAbortedNamesTheRankItAbortedFor) {
  Pair pair(FakeOptions{});
  pair.e0.abort(HVD_ERR_ABORTED, 1);
  Refusal r = refused(pair, HVD_ERR_ABORTED);
  EXPECT_EQ(r.completion.peer, 1);
  EXPECT_EQ(r.reported, -1);
}

TEST(P2pEngine, RegistersThroughTheCache) {
  FakeOptions options;
  options.needs_mr = true;
  Pair pair(options);
  EXPECT_TRUE(pair.e0.needs_registration());
  const hvd_p2p_api* api = Engine::api();
  std::vector<uint8_t> buf(256), in(256);
  for (int step = 0; step < 5; ++step) {
    hvd_p2p_request *s, *r;
    ASSERT_EQ(api->isend(&pair.p0, 1, buf.data() + 16, 64, step, &s), HVD_OK);
    ASSERT_EQ(api->irecv(&pair.p1, 0, in.data(), 64, step, &r), HVD_OK);
    finish(api, &pair.p0, s);
    EXPECT_EQ(finish(api, &pair.p1, r).status, HVD_OK);
  }
  // One registration each side, reused by every later step.
  EXPECT_EQ(pair.t0->registrations, 1);
  EXPECT_EQ(pair.t1->registrations, 1);
}

// A wait that sleeps tells which extra fds woke it; one within the spin
// polls nothing and tells none.
TEST(P2pEngine, WaitTellsWhichExtraFdsWereReadable) {
  Pair pair(FakeOptions{});
  const int ready = eventfd(1, EFD_CLOEXEC);
  const int quiet = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(ready, 0);
  ASSERT_GE(quiet, 0);
  const int fds[] = {ready, quiet};
  pair.e0.set_spin_time(std::chrono::hours(1));
  pair.e0.note_activity();
  EXPECT_TRUE(pair.e0.wait(std::chrono::seconds(1), fds).empty());
  pair.e0.set_spin_time(std::chrono::nanoseconds(0));
  std::span<const pollfd> polled = pair.e0.wait(std::chrono::seconds(1), fds);
  ASSERT_EQ(polled.size(), 2u);
  EXPECT_EQ(polled[0].fd, ready);
  EXPECT_NE(polled[0].revents & POLLIN, 0);
  EXPECT_EQ(polled[1].fd, quiet);
  EXPECT_EQ(polled[1].revents, 0);
  close(ready);
  close(quiet);
}

}  // namespace
}  // namespace hvd::p2p
