// horovod.toml as a user (or a stray file) may write it: the TOML parser,
// the core's keys against the schema, plugin tables, reducer rules. Any
// input either loads or throws hvd::Error with HVD_ERR_CONFIG.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "common/error.h"
#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  const std::map<std::string, std::string> no_environment;
  try {
    hvd::Config config =
        hvd::Config::from_text(text, "horovod.toml", no_environment);
    // What the core and the plugins read back: every entry, the canonical
    // text every rank compares, the plugin tables and the rules.
    for (const auto& entry : config.entries()) (void)entry.value.size();
    (void)config.digest();
    for (const char* kind : {"transport", "reducer", "adapter"}) {
      for (const char* name : {"tcp", "shm", "ring", "ofi", "torch"}) {
        const hvd_config_table* table = config.plugin_table(kind, name);
        for (size_t i = 0; i < table->count; ++i) {
          (void)config.plugin_key_error(kind, name, table->values[i].key,
                                        "checked");
        }
      }
    }
    for (hvd_collective c = 0; c < HVD_COLL_COUNT; ++c)
      (void)config.rules(c);
  } catch (const hvd::Error& e) {
    if (e.status() != HVD_ERR_CONFIG) std::abort();
  }
  return 0;
}
