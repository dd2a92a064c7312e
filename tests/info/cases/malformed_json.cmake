# With --json an invalid configuration is also a JSON object on stdout.
set(ARGS --json --config ${DATA}/malformed.toml)
set(EXIT 1)
set(JSON_PATHS error)
set(JSON_MATCHES "/malformed\\.toml:3:[0-9]+: ")
