# HOROVOD_HIERARCHICAL_ALLREDUCE=1 loads the hierarchical reducer and puts
# it first for every allreduce size on more than one host, as Horovod does;
# allgather stays with the scores.
set(ARGS --plan --size 6 --hosts 3)
set(ENV HOROVOD_PLUGIN_PATH=${BUILT_PLUGINS} HOROVOD_HIERARCHICAL_ALLREDUCE=1)
set(EXIT 0)
set(EXPECT
  "Plan for 6 rank\\(s\\) on 3 host\\(s\\) \\(ranks per host: 2,2,2\\)"
  "reducers: [^\n]*hierarchical\n"
  "\nallreduce\n(  [0-9]+ [KMG]?i?B \\.\\.[ 0-9KMGiB]* hierarchical \\[[^\n]*\n)+\nallgather\n  0 B \\.\\.[ 0-9KMGiB]* [a-gi-z][a-z-]* \\[")
