// The timeline's pieces in one process: the record queue, the trace
// writer's JSON (rows, nesting kept valid across start and stop), the
// plugin hooks, and the front's start / stop.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/error.h"
#include "timeline/phases.h"
#include "timeline/plugin_hooks.h"
#include "timeline/record_queue.h"
#include "timeline/timeline.h"
#include "timeline/trace_writer.h"

namespace hvd::timeline {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

std::string temp_path(const char* name) {
  return testing::TempDir() + "/hvd-timeline-" + std::to_string(getpid()) +
         "-" + name + ".json";
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RecordQueue, KeepsOrderAndRefusesWhenFull) {
  RecordQueue q(4);
  EXPECT_EQ(q.capacity(), 4u);
  for (int i = 0; i < 4; ++i) {
    Record r;
    r.arg = i;
    EXPECT_TRUE(q.push(r));
  }
  EXPECT_FALSE(q.push(Record{}));
  Record out;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(q.pop(out));
    EXPECT_EQ(out.arg, i);
  }
  EXPECT_FALSE(q.pop(out));
  EXPECT_TRUE(q.push(Record{}));  // room again after the pops
}

TEST(RecordQueue, ManyProducersLoseNothingThatWasAccepted) {
  RecordQueue q(1 << 10);
  constexpr int kThreads = 4, kEach = 5000;
  std::atomic<int> accepted{0};
  std::atomic<bool> done{false};
  int64_t popped = 0, sum = 0;
  std::thread consumer([&] {
    Record r;
    while (true) {
      bool finished = done.load();
      while (q.pop(r)) {
        ++popped;
        sum += r.arg;
      }
      if (finished) break;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> producers;
  int64_t expected_sum = 0;
  std::atomic<int64_t> accepted_sum{0};
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Record r;
        r.arg = t * kEach + i;
        while (!q.push(r)) std::this_thread::yield();
        ++accepted;
        accepted_sum += r.arg;
      }
    });
  }
  for (auto& p : producers) p.join();
  done = true;
  consumer.join();
  for (int i = 0; i < kThreads * kEach; ++i) expected_sum += i;
  EXPECT_EQ(popped, accepted.load());
  EXPECT_EQ(sum, accepted_sum.load());
  EXPECT_EQ(sum, expected_sum);
}

class WriterTest : public testing::Test {
 protected:
  std::string row_a_ = "grad \"a\"", row_b_ = "grad.b";
  RecordQueue queue_{64};
};

TEST_F(WriterTest, NamesRowsEscapesAndNests) {
  std::string path = temp_path("writer");
  TraceWriter w(queue_, path, 3, 1000);
  std::string out;
  w.format({2000, &row_a_, "NEGOTIATE_ALLREDUCE", 0, RecordKind::kBegin,
            ArgKey::kNone},
           out);
  w.format({3000, &row_a_, nullptr, 1, RecordKind::kEnd, ArgKey::kLastRank},
           out);
  w.format({3500, &row_b_, "ARRIVED", 2, RecordKind::kInstant, ArgKey::kRank},
           out);
  w.format({4000, nullptr, nullptr, 0, RecordKind::kCycle, ArgKey::kNone}, out);
  EXPECT_NE(out.find("\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":3,"
                     "\"tid\":1,\"args\":{\"name\":\"grad \\\"a\\\"\"}"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"name\":\"NEGOTIATE_ALLREDUCE\",\"ph\":\"B\",\"pid\":3,"
                     "\"tid\":1,\"ts\":1.000"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"ph\":\"E\",\"pid\":3,\"tid\":1,\"ts\":2.000,"
                     "\"args\":{\"last_rank\":1}"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"name\":\"ARRIVED\",\"ph\":\"i\",\"pid\":3,\"tid\":2"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"args\":{\"rank\":2}"), std::string::npos) << out;
  EXPECT_NE(out.find("\"name\":\"CYCLE_START\",\"ph\":\"i\""),
            std::string::npos)
      << out;
  w.finish(5000, 0);
}

TEST_F(WriterTest, DropsEndsWithoutBeginsAndClosesOpenSpans) {
  std::string path = temp_path("nesting");
  TraceWriter w(queue_, path, 0, 1000);
  std::string out;
  // From before the trace started: skipped, and so is its end.
  w.format({500, &row_a_, "ALLREDUCE", 0, RecordKind::kBegin, ArgKey::kNone},
           out);
  w.format({1500, &row_a_, nullptr, 0, RecordKind::kEnd, ArgKey::kNone}, out);
  EXPECT_EQ(count(out, "\"ph\":\"B\""), 0u) << out;
  EXPECT_EQ(count(out, "\"ph\":\"E\""), 0u) << out;
  w.format({2000, &row_b_, "ALLREDUCE", 0, RecordKind::kBegin, ArgKey::kNone},
           out);
  w.format({2100, &row_b_, "QUEUE", 0, RecordKind::kBegin, ArgKey::kNone}, out);
  out.clear();
  w.format_end(9000, 7, out);
  EXPECT_EQ(count(out, "\"ph\":\"E\""), 2u) << out;
  EXPECT_NE(out.find("\"name\":\"EVENTS_DROPPED\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"count\":7"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.size() - 4), "\n]}\n");
  w.finish(9000, 0);
}

TEST(TimelineTest, StartWritesAWholeDocumentAndStopCloses) {
  Timeline t;
  EXPECT_FALSE(t.on());
  std::string path = temp_path("front");
  t.start(path, true, 0);
  EXPECT_TRUE(t.on());
  EXPECT_TRUE(t.marks_cycles());
  EXPECT_EQ(t.path(), path);
  const std::string* row = t.intern("w1");
  EXPECT_EQ(row, t.intern("w1"));
  t.arrived(row, 1);
  t.arrived(row, 1);  // a repeat (a cached bit sent again) is ignored
  t.arrived(row, 0);
  t.begin(row, negotiate_phase(HVD_COLL_ALLREDUCE));
  t.negotiated(row);
  t.begin(row, op_phase(HVD_COLL_ALLREDUCE));
  t.begin(row, kQueue);
  t.cycle(Timeline::now());
  t.stop();
  EXPECT_FALSE(t.on());
  t.stop();  // nothing running: nothing happens
  std::string text = read(path);
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 0), 0u)
      << text;
  EXPECT_EQ(count(text, "\"name\":\"ARRIVED\""), 2u) << text;
  EXPECT_NE(text.find("\"last_rank\":0"), std::string::npos) << text;
  // NEGOTIATE closed by negotiated(), ALLREDUCE and QUEUE closed at stop.
  EXPECT_EQ(count(text, "\"ph\":\"B\""), 3u) << text;
  EXPECT_EQ(count(text, "\"ph\":\"E\""), 3u) << text;
  EXPECT_NE(text.find("CYCLE_START"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 4), "\n]}\n");
  unlink(path.c_str());
}

TEST(TimelineTest, ARestartReplacesTheTrace) {
  Timeline t;
  std::string first = temp_path("first"), second = temp_path("second");
  t.start(first, false, 0);
  t.begin(t.intern("x"), "ALLREDUCE");
  t.start(second, false, 0);
  t.end(t.intern("x"));  // its begin went to the first file
  t.stop();
  EXPECT_EQ(count(read(first), "\"ph\":\"B\""), 1u);
  EXPECT_EQ(count(read(first), "\"ph\":\"E\""), 1u);  // closed at the switch
  EXPECT_EQ(count(read(second), "\"ph\":\"E\""), 0u) << read(second);
  unlink(first.c_str());
  unlink(second.c_str());
}

TEST(TimelineTest, AnUnwritablePathIsAnErrorNamingIt) {
  Timeline t;
  try {
    t.start("/nonexistent-dir/trace.json", false, 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_SYSTEM);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/trace.json"),
              std::string::npos);
  }
  EXPECT_FALSE(t.on());
}

TEST(PluginHooksTest, SpansLandOnTheNamedRowOrTheTaskRows) {
  Timeline t;
  PluginHooks hooks(t);
  hooks.begin("", "IGNORED_WHEN_OFF");
  std::string path = temp_path("hooks");
  t.start(path, false, 0);
  std::vector<const std::string*> rows = {t.intern("t1"), t.intern("t2")};
  hooks.begin("", "NO_TASK");  // no task rows: dropped
  t.set_task_rows(&rows);
  hooks.begin("", "REDUCE_SCATTER");
  hooks.end("", "REDUCE_SCATTER");
  t.set_task_rows(nullptr);
  hooks.begin("own row", "SEND");
  hooks.end("own row", "SEND");
  t.stop();
  std::string text = read(path);
  EXPECT_EQ(count(text, "\"name\":\"REDUCE_SCATTER\""), 2u) << text;
  EXPECT_EQ(count(text, "\"name\":\"SEND\""), 1u) << text;
  EXPECT_EQ(text.find("NO_TASK"), std::string::npos) << text;
  EXPECT_EQ(text.find("IGNORED_WHEN_OFF"), std::string::npos) << text;
  EXPECT_NE(text.find("\"args\":{\"name\":\"own row\"}"), std::string::npos);
  unlink(path.c_str());
}

}  // namespace
}  // namespace hvd::timeline
