# --json: the same report, machine-readable.
set(ARGS --config ${DATA}/good.toml --json)
set(ENV HOROVOD_PLUGIN_PATH=${PLUGINS})
set(EXIT 0)
set(EXPECT
  "\"key\": \"runtime\\.fusion_threshold\",\n *\"value\": \"\\\\\"64MiB\\\\\"\",\n *\"source\": \"[^\"]*/good\\.toml:2:1\""
  "\"name\": \"infofixture\",\n *\"path\": \"[^\"]*/libhorovod-reducer-infofixture\\.so\",\n *\"loads\": true,\n *\"abi\": \"1\\.[0-9]+\",\n *\"version\": \"9\\.8\\.7\""
  "\"name\": \"broken\",\n *\"path\": \"[^\"]*\",\n *\"loads\": false")
set(JSON_PATHS abi config/file config/digest plugins/selected/0/role
  plugins/selected/0/candidates/0/loads plugins/selected/3/candidates/0/name
  plugins/selected/3/candidates/0/loads)
set(JSON_MATCHES "^1\\.[0-9]+$" "/good\\.toml$" "^[0-9a-f]+$" "^transport\\.intra$"
  "^OFF$" "^infofixture$" "^ON$")
