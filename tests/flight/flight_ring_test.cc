// The flight recorder's ring, its text and its JSON, in one process.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/flight_ring.h"

namespace hvd::runtime {
namespace {

uint64_t record(FlightRing& ring, const std::string& name, FlightState state,
                int64_t submitted) {
  FlightEntry& e = ring.open();
  const uint64_t seq = ring.recorded() + 1;
  e.name.store(name);
  e.collective = HVD_COLL_ALLREDUCE;
  e.dtype = HVD_FLOAT32;
  e.op = HVD_OP_SUM;
  e.bytes = 64;
  e.state = static_cast<uint8_t>(state);
  e.submitted_ns = submitted;
  ring.publish(e, seq);
  return seq;
}

std::vector<std::string> names(const FlightRing& ring) {
  std::vector<std::string> out;
  flight_each(
      ring,
      [](void* ctx, const FlightEntry& e) {
        char name[48];
        e.name.load(name);
        static_cast<std::vector<std::string>*>(ctx)->push_back(name);
      },
      &out);
  return out;
}

FlightNames g_names;

TEST(FlightRing, KeepsTheLastEntriesOldestFirstWhenItWraps) {
  FlightRing ring(0, {0, 1}, 3, g_names);
  EXPECT_EQ(ring.capacity(), 4u);  // a power of two
  std::vector<uint64_t> seqs;
  for (int i = 0; i < 7; ++i) {
    seqs.push_back(
        record(ring, "t" + std::to_string(i), FlightState::kDone, 1 + i));
  }
  EXPECT_EQ(ring.recorded(), 7u);
  EXPECT_EQ(names(ring),
            (std::vector<std::string>{"t3", "t4", "t5", "t6"}));
  // An overwritten op's updates go nowhere; a live one's land.
  EXPECT_EQ(ring.find(seqs[0]), nullptr);
  EXPECT_EQ(ring.find(seqs[2]), nullptr);
  EXPECT_NE(ring.find(seqs[3]), nullptr);
  ASSERT_NE(ring.find(seqs[6]), nullptr);
  char name[48];
  ring.find(seqs[6])->name.load(name);
  EXPECT_STREQ(name, "t6");
}

TEST(FlightRing, BeforeWrappingHoldsWhatWasRecorded) {
  FlightRing ring(2, {3, 5}, 4, g_names);
  EXPECT_TRUE(names(ring).empty());
  record(ring, "a", FlightState::kSubmitted, 1);
  record(ring, "b", FlightState::kSubmitted, 2);
  EXPECT_EQ(names(ring), (std::vector<std::string>{"a", "b"}));
}

TEST(FlightNames, NumbersNamesAndStopsWhenFull) {
  FlightNames names;
  std::vector<std::string> keys(FlightNames::kMax + 1);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = "n" + std::to_string(i);
  for (size_t i = 0; i < FlightNames::kMax; ++i) {
    EXPECT_EQ(names.id(keys[i]), i + 1);
  }
  EXPECT_EQ(names.id(keys[FlightNames::kMax]), 0);
  char text[24];
  names.load(2, text);
  EXPECT_STREQ(text, "n1");
  names.load(0, text);
  EXPECT_STREQ(text, "");
}

TEST(FlightRing, CutsLongNamesToItsFixedSize) {
  FlightRing ring(0, {0}, 2, g_names);
  const std::string long_name(200, 'x');
  record(ring, long_name, FlightState::kDone, 1);
  const std::vector<std::string> got = names(ring);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], std::string(47, 'x'));
}

TEST(FlightText, FormatsNumbersAndEscapesJson) {
  char buf[128];
  FlightText t(buf, sizeof buf);
  t.add(int64_t{-42}).add(" ").add(int64_t{0}).add(" ");
  t.add_seconds(3012345678).add(" ").add_seconds(5000000).add(" ");
  t.add_json("a\"b\\c\nd");
  EXPECT_EQ(std::string(t.view()), "-42 0 3.012 0.005 \"a\\\"b\\\\c\\u000ad\"");
  EXPECT_FALSE(t.cut());
}

TEST(FlightText, CutsWhatDoesNotFit) {
  char buf[8];
  FlightText t(buf, sizeof buf);
  t.add("0123456789");
  EXPECT_EQ(t.view().size(), 7u);
  EXPECT_TRUE(t.cut());
}

TEST(FlightLine, SaysWhereAnOpIs) {
  FlightNames names;
  const std::string reducer = "ring", transport = "shm";
  FlightRing ring(1, {0, 1}, 4, names);
  const uint64_t seq = record(ring, "grad", FlightState::kPosted, 1000000000);
  FlightEntry* e = ring.find(seq);
  e->reducer = names.id(reducer);
  e->transport = names.id(transport);
  EXPECT_EQ(names.id(reducer), 1);  // known names keep their number
  e->peer = 1;
  char buf[256];
  FlightText line(buf, sizeof buf);
  flight_line(ring, *e, 4012000000, line);
  EXPECT_EQ(std::string(line.view()),
            "set 1 #1 allreduce 'grad' float32 SUM 64 B: running since "
            "3.012 s, reducer ring over shm, waits for rank 1");
}

std::string json_of(const FlightHeader& h, const FlightRing* const* rings,
                    size_t count) {
  std::string out;
  flight_json(
      h, rings, count,
      [](void* ctx, std::string_view chunk) {
        static_cast<std::string*>(ctx)->append(chunk);
      },
      &out);
  return out;
}

TEST(FlightJson, WritesTheDocumentHorovodrunReads) {
  FlightRing ring(0, {0, 1}, 2, g_names);
  record(ring, "old", FlightState::kDone, 10);
  const uint64_t seq = record(ring, "x\"y", FlightState::kSubmitted, 20);
  ring.find(seq)->peer = 1;
  const FlightRing* rings[] = {&ring};
  FlightHeader h;
  h.rank = 1;
  h.size = 2;
  h.pid = 77;
  h.host = "node";
  h.reason = "SIGUSR1";
  h.now_ns = 100;
  h.wall_offset_ns = 1000;
  EXPECT_EQ(
      json_of(h, rings, 1),
      "{\"format\":\"horovod-flight-recorder\",\"version\":1,\"rank\":1,"
      "\"size\":2,\"pid\":77,\"host\":\"node\",\"reason\":\"SIGUSR1\","
      "\"time_ns\":1100,\n \"sets\":[\n  {\"id\":0,\"ranks\":[0,1],"
      "\"capacity\":2,\"recorded\":2,\"entries\":["
      "\n    {\"seq\":1,\"name\":\"old\",\"collective\":\"allreduce\","
      "\"dtype\":\"float32\",\"op\":\"SUM\",\"bytes\":64,\"reducer\":\"\","
      "\"transport\":\"\",\"state\":\"done\",\"peer\":-1,"
      "\"submitted_ns\":1010,\"negotiated_ns\":0,\"posted_ns\":0,"
      "\"done_ns\":0},"
      "\n    {\"seq\":2,\"name\":\"x\\\"y\",\"collective\":\"allreduce\","
      "\"dtype\":\"float32\",\"op\":\"SUM\",\"bytes\":64,\"reducer\":\"\","
      "\"transport\":\"\",\"state\":\"negotiating\",\"peer\":1,"
      "\"submitted_ns\":1020,\"negotiated_ns\":0,\"posted_ns\":0,"
      "\"done_ns\":0}]}]}\n");
}

TEST(FlightJson, StreamsRingsLargerThanItsBuffer) {
  FlightRing ring(0, {0, 1}, 500, g_names);
  for (int i = 0; i < 700; ++i) {
    record(ring, "tensor." + std::to_string(i), FlightState::kDone, 1 + i);
  }
  const FlightRing* rings[] = {&ring};
  FlightHeader h;
  const std::string json = json_of(h, rings, 1);
  EXPECT_EQ(json.find("\"tensor.187\""), std::string::npos);  // 512 kept
  EXPECT_NE(json.find("\"tensor.188\""), std::string::npos);
  EXPECT_NE(json.find("\"tensor.699\""), std::string::npos);
  size_t entries = 0;
  for (size_t at = 0; (at = json.find("\"seq\":", at)) != std::string::npos;
       ++at) {
    ++entries;
  }
  EXPECT_EQ(entries, 512u);
  EXPECT_EQ(json.substr(json.size() - 6), "}]}]}\n");
}

}  // namespace
}  // namespace hvd::runtime
