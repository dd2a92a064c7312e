set(ARGS --help)
set(EXIT 0)
set(EXPECT "Usage: horovod-info \\[--config FILE\\] \\[--json\\]" "--defaults")
