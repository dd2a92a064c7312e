# --layout without --plan is a usage error.
set(ARGS --layout 2,x)
set(EXIT 2)
set(EXPECT "horovod-info: --size, --hosts and --layout go with --plan")
