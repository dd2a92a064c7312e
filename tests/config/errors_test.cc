// Every kind of mistake in a file names the file, line, column and key.
#include <gtest/gtest.h>

#include "config_test_support.h"

namespace hvd {
namespace {

using ::testing::HasSubstr;
using testing::load_error;

TEST(ConfigErrors, UnknownKeySuggestsTheNearest) {
  std::string e = load_error("[runtime]\n\nfusion_treshold = \"1MiB\"\n");
  EXPECT_THAT(e, HasSubstr("horovod.toml:3:1: key 'runtime.fusion_treshold': "
                           "unknown key (did you mean "
                           "'runtime.fusion_threshold'?)"));
}

// The parser mishandles these (tests/fuzz found it), so they never reach it.
TEST(ConfigErrors, CharactersTheParserMishandlesAreRefusedWithTheirPlace) {
  std::string e = load_error("[transport]\n[re\xef\xb9\xbfu]\n");
  EXPECT_THAT(e, HasSubstr("horovod.toml:2:4: character U+FE7F is not "
                           "supported in horovod.toml"));
  // Its neighbours outside the range still load, in a comment.
  EXPECT_NO_THROW(testing::load_text("# \xef\xbf\xbd \xef\xbb\xbf\n"));
  // Any non-ASCII character outside strings and comments (U+048D here).
  e = load_error("[[broadcast\xd2\x8dules]]\n");
  EXPECT_THAT(e, HasSubstr("horovod.toml:1:12: character U+048D is not "
                           "supported in horovod.toml"));
  EXPECT_NO_THROW(testing::load_text(
      "\xef\xbb\xbf[log]\nlevel = \"warning\" # \xd2\x8d \"\xd2\x8d\"\n"));
}

TEST(ConfigErrors, KeyInTheWrongTableSuggestsItsTable) {
  std::string e = load_error("cycle_time = \"1ms\"\n");
  EXPECT_THAT(e, HasSubstr(":1:1: key 'cycle_time': unknown key (did you mean "
                           "'runtime.cycle_time'?)"));
}

TEST(ConfigErrors, UnknownSectionSuggestsTheNearest) {
  std::string e = load_error("[runtme]\nautotune = true\n");
  EXPECT_THAT(e, HasSubstr(":1:2: key 'runtme': unknown key (did you mean "
                           "'runtime'?)"));
}

TEST(ConfigErrors, FarOffKeyHasNoSuggestion) {
  std::string e = load_error("[log]\nzzzzzzzz = 1\n");
  EXPECT_THAT(e, HasSubstr(":2:1: key 'log.zzzzzzzz': unknown key"));
  EXPECT_THAT(e, ::testing::Not(HasSubstr("did you mean")));
}

TEST(ConfigErrors, LooseValueInAPluginSection) {
  std::string e = load_error("[transport]\nprovider = \"efa\"\n");
  EXPECT_THAT(e, HasSubstr(":2:1: key 'transport.provider': unknown key"));
  EXPECT_THAT(e, HasSubstr("unknown key; a plugin's settings go in its own "
                           "table, [transport.<plugin>]"));
}

TEST(ConfigErrors, WrongType) {
  std::string e = load_error("[runtime]\nautotune = \"yes\"\n");
  EXPECT_THAT(e, HasSubstr("horovod.toml:2:12: key 'runtime.autotune': "
                           "expected a boolean, got the string \"yes\""));
  e = load_error("[plugins]\nsearch_path = \"/opt\"\n");
  EXPECT_THAT(e, HasSubstr(":2:15: key 'plugins.search_path': expected an "
                           "array of strings"));
  e = load_error("[reducer]\nload = [\"ring\", 3]\n");
  EXPECT_THAT(e, HasSubstr(":2:8: key 'reducer.load': expected an array of "
                           "strings, but element 1 is the integer 3"));
  e = load_error("[runtime]\ncache_capacity = -1\n");
  EXPECT_THAT(e, HasSubstr("key 'runtime.cache_capacity': expected a "
                           "non-negative integer"));
  e = load_error("[runtime]\nsection = 1\n[runtime.x]\n");
  EXPECT_THAT(e, HasSubstr("key 'runtime.section': unknown key"));
  e = load_error("runtime = 3\n");
  EXPECT_THAT(e, HasSubstr(":1:11: key 'runtime': expected a table"));
}

TEST(ConfigErrors, BadValues) {
  std::string e = load_error("[runtime]\nfusion_threshold = \"64MBs\"\n");
  EXPECT_THAT(e, HasSubstr(":2:20: key 'runtime.fusion_threshold': expected "
                           "a size"));
  e = load_error("[runtime]\ncycle_time = \"1 fortnight\"\n");
  EXPECT_THAT(e, HasSubstr(":2:14: key 'runtime.cycle_time': expected a "
                           "duration"));
  e = load_error("[log]\nlevel = \"verbose\"\n");
  EXPECT_THAT(e, HasSubstr(":2:9: key 'log.level': unknown value "
                           "\"verbose\"; one of trace, debug, info, warning, "
                           "error, fatal"));
  e = load_error("[bootstrap]\nbackend = \"pmi\"\n");
  EXPECT_THAT(e, HasSubstr("unknown value \"pmi\"; one of auto, rendezvous, "
                           "pmix, single (did you mean 'pmix'?)"));
  e = load_error("[transport]\nintra = []\n");
  EXPECT_THAT(e, HasSubstr(":2:9: key 'transport.intra': the list of names "
                           "is empty"));
}

TEST(ConfigErrors, SyntaxErrorHasTomlsMessageAndPosition) {
  std::string e = load_error("[runtime]\ncycle_time = \n");
  EXPECT_THAT(e, HasSubstr("horovod.toml:2:"));
  e = load_error("[runtime]\nautotune = true\nautotune = false\n");
  EXPECT_THAT(e, HasSubstr("horovod.toml:3:12: "));
  EXPECT_THAT(e, HasSubstr("autotune"));
}

TEST(ConfigErrors, MissingExplicitFile) {
  ConfigLoadOptions options;
  options.path = "/nonexistent/horovod.toml";
  std::map<std::string, std::string> env;
  options.environment = &env;
  try {
    Config::load(options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_CONFIG);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/horovod.toml: cannot read"));
  }
}

}  // namespace
}  // namespace hvd
