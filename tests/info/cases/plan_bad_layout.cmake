# A layout that is not counts per host, and one that --size contradicts.
set(ARGS --plan --size 5 --layout 2,2)
set(EXIT 2)
set(EXPECT "horovod-info: --size 5 but --layout 2,2 holds 4 rank\\(s\\)")
