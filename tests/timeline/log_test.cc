// The core's log lines: the level filter, the rank and origin in every
// line, and the time stamp that [log] hide_time leaves out.
#include "common/log.h"

#include <gtest/gtest.h>

#include <regex>

namespace hvd {
namespace {

class LogTest : public testing::Test {
 protected:
  void SetUp() override { saved_ = log_level(); }
  void TearDown() override {
    set_log_level(saved_);
    set_log_rank(-1);
    set_log_hide_time(false);
  }
  hvd_log_level saved_ = HVD_LOG_WARNING;
};

TEST_F(LogTest, ParsesEveryLevelByName) {
  const char* names[] = {"trace", "DEBUG", "Info", "warning", "error", "fatal"};
  for (int i = 0; i <= HVD_LOG_FATAL; ++i) {
    hvd_log_level level = -1;
    EXPECT_TRUE(parse_log_level(names[i], &level)) << names[i];
    EXPECT_EQ(level, i);
  }
  hvd_log_level level = HVD_LOG_INFO;
  EXPECT_FALSE(parse_log_level("verbose", &level));
  EXPECT_EQ(level, HVD_LOG_INFO);
}

TEST_F(LogTest, FiltersBelowTheLevel) {
  set_log_level(HVD_LOG_ERROR);
  EXPECT_FALSE(log_enabled(HVD_LOG_WARNING));
  EXPECT_TRUE(log_enabled(HVD_LOG_ERROR));
  EXPECT_TRUE(log_enabled(HVD_LOG_FATAL));
  testing::internal::CaptureStderr();
  HVD_LOG(WARNING) << "hidden";
  HVD_LOG(ERROR) << "shown";
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.find("hidden"), std::string::npos) << out;
  EXPECT_NE(out.find("shown"), std::string::npos) << out;
  set_log_level(HVD_LOG_TRACE);
  EXPECT_TRUE(log_enabled(HVD_LOG_TRACE));
}

TEST_F(LogTest, LinesNameTheRankAndOriginWithoutTime) {
  set_log_level(HVD_LOG_INFO);
  set_log_hide_time(true);
  set_log_rank(3);
  testing::internal::CaptureStderr();
  HVD_LOG(INFO) << "ready";
  log_line(HVD_LOG_WARNING, "reducer ring", "slow peer");
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out,
            "[INFO horovod rank 3] ready\n"
            "[WARNING horovod rank 3 reducer ring] slow peer\n");
}

TEST_F(LogTest, LinesCarryATimeStampUnlessHidden) {
  set_log_level(HVD_LOG_DEBUG);
  set_log_rank(0);
  testing::internal::CaptureStderr();
  HVD_LOG(DEBUG) << "stamped";
  std::string out = testing::internal::GetCapturedStderr();
  std::regex line(
      R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} DEBUG horovod rank 0\] stamped
)");
  EXPECT_TRUE(std::regex_match(out, line)) << out;
}

TEST_F(LogTest, BeforeTheRankIsKnownLinesSayHorovod) {
  set_log_hide_time(true);
  testing::internal::CaptureStderr();
  HVD_LOG(ERROR) << "early";
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "[ERROR horovod] early\n");
}

}  // namespace
}  // namespace hvd
