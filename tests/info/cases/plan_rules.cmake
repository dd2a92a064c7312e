# --plan on two hosts of two ranks: a rule, then the reducers' scores, with
# hierarchical first for large allreduce and allgather.
set(ARGS --plan --layout 2,2 --config ${DATA}/plan.toml)
set(ENV HOROVOD_PLUGIN_PATH=${BUILT_PLUGINS})
set(EXIT 0)
set(EXPECT
  "Plan for 4 rank\\(s\\) on 2 host\\(s\\) \\(ranks per host: 2,2\\), host memory; reducers: ring, tree, hierarchical\n"
  "\nallreduce\n  0 B \\.\\. 4 KiB +tree \\[rule [^\n]*/plan\\.toml:5:1\\], "
  "\n  256 KiB \\.\\. +hierarchical \\[85\\], [^\n]*ring"
  "\nallgather\n[^a-z]*\n?(  [^\n]*\n)*  256 KiB \\.\\. +hierarchical \\[85\\]"
  "\nbroadcast\n  0 B \\.\\. +ring \\[rule [^\n]*/plan\\.toml:9:1\\]"
  "\nalltoall\n"
  "\nreducescatter\n")
set(REJECT "broadcast\n[^\n]*\n[^\n]*hierarchical")
