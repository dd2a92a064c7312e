// config/horovod.toml documents every key at its default: it must parse,
// set every key of the schema, agree with the built-in defaults, and be
// exactly what the schema renders (so the two cannot drift).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/schema.h"
#include "config_test_support.h"

namespace hvd {
namespace {

const char* kFile = HOROVOD_DEFAULT_CONFIG_FILE;

TEST(ConfigDefaultFile, ParsesToTheBuiltInDefaults) {
  std::map<std::string, std::string> env;
  ConfigLoadOptions options;
  options.path = kFile;
  options.environment = &env;
  Config file = Config::load(options);
  Config defaults;
  std::vector<Config::Entry> from_file = file.entries();
  std::vector<Config::Entry> built_in = defaults.entries();
  ASSERT_EQ(from_file.size(), built_in.size());
  for (size_t i = 0; i < built_in.size(); ++i) {
    EXPECT_EQ(from_file[i].key, built_in[i].key);
    EXPECT_EQ(from_file[i].value, built_in[i].value) << built_in[i].key;
    // Set in the file, not left to the default.
    EXPECT_EQ(from_file[i].source.rfind(kFile, 0), 0u)
        << built_in[i].key << " is not set in " << kFile;
  }
  EXPECT_EQ(file.digest(), defaults.digest());
}

TEST(ConfigDefaultFile, IsTheSchemaRendered) {
  std::ifstream in(kFile);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), default_config_text())
      << kFile << " is out of date; regenerate it with "
      << "`horovod-info --defaults > config/horovod.toml`";
}

TEST(ConfigDefaultFile, EveryCoreKeyIsDocumented) {
  std::string text = default_config_text();
  for (const KeySpec& spec : schema()) {
    EXPECT_FALSE(spec.doc.empty()) << spec.key;
    if (!spec.env.empty()) {
      EXPECT_NE(text.find(std::string(spec.env)), std::string::npos)
          << spec.key;
    }
  }
}

}  // namespace
}  // namespace hvd
