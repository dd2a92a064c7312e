# A bad environment value names the variable.
set(ARGS --config ${DATA}/good.toml)
set(ENV HOROVOD_CYCLE_TIME=soon)
set(EXIT 1)
set(EXPECT "HOROVOD_CYCLE_TIME=\"soon\": key 'runtime\\.cycle_time': expected a number of milliseconds")
