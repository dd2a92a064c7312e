# A valid file, an environment override, a plugin that loads, one that does
# not, and fallbacks of which none loads.
set(ARGS --config ${DATA}/good.toml)
set(ENV HOROVOD_PLUGIN_PATH=${PLUGINS} HOROVOD_CYCLE_TIME=5)
set(EXIT 0)
set(EXPECT
  "Horovod [0-9.]+, plugin ABI 1\\.[0-9]+\n"
  "file: +[^\n]*/good\\.toml\n"
  "digest: +[0-9a-f]+\n"
  "Plugin search path\n  [^\n]*/plugins\n"
  "reducer +infofixture +[^\n]*/libhorovod-reducer-infofixture\\.so\n +ABI 1\\.[0-9]+, version 9\\.8\\.7\n"
  "transport +broken +[^\n]*/libhorovod-transport-broken\\.so\n +fails: [^\n]+"
  "transport\\.intra +absent +does not load: [^\n]*'absent'"
  "\n +/nonexistent/libhorovod-transport-x\\.so +does not load: "
  "none of these loads"
  "reducer\\.load +infofixture +loads: [^\n]*/libhorovod-reducer-infofixture\\.so, version 9\\.8\\.7\n"
  "runtime\\.fusion_threshold = \"64MiB\" +# [^\n]*/good\\.toml:2:1\n"
  "runtime\\.autotune = true +# [^\n]*/good\\.toml:3:1\n"
  "runtime\\.cycle_time = \"5ms\" +# HOROVOD_CYCLE_TIME\n"
  "runtime\\.cache_capacity = 1024 +# default\n"
  "plugins\\.search_path = \\[\"[^\n]*/plugins\"\\] +# HOROVOD_PLUGIN_PATH\n"
  "allreduce\\.rules\\[0\\] = { max_bytes = \"64KiB\", reducer = \"infofixture\" } +# [^\n]*/good\\.toml:14:1\n"
  "transport\\.ofi\\.provider = \"efa\" +# [^\n]*/good\\.toml:9:1\n")
