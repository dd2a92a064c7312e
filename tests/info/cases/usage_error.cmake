set(ARGS --bogus)
set(EXIT 2)
set(EXPECT "horovod-info: unknown option '--bogus'" "Usage: horovod-info")
