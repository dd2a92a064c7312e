# --plan's flags: a layout and a host count together, a size the layout
# does not hold, a bad layout, and the flags without --plan.
set(ARGS --plan --hosts 2 --layout 2,2)
set(EXIT 2)
set(EXPECT "horovod-info: --hosts and --layout exclude each other")
