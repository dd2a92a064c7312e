# A plugin whose system library is absent (Open MPI, UCX ... on a machine
# without them) is listed as not loadable, naming the library; horovod-info
# still succeeds, and the embedded default is untouched.
set(ARGS --config ${DATA}/good.toml)
set(ENV HOROVOD_PLUGIN_PATH=${PLUGINS_MISSING_LIBRARY})
set(EXIT 0)
set(EXPECT
  "transport +needslib +[^\n]*/libhorovod-transport-needslib\\.so\n +not loadable: libhvd-info-dependency\\.so missing\n")
set(REJECT "fails: [^\n]*needslib")
