# A TOML syntax error: TOML++'s message at file:line:column, exit status 1.
set(ARGS --config ${DATA}/malformed.toml)
set(EXIT 1)
set(EXPECT "horovod-info: [^\n]*/malformed\\.toml:3:[0-9]+: [^\n]+")
set(REJECT "Effective configuration")
