# One host: the hierarchical reducer offers nothing.
set(ARGS --plan --size 3 --config ${DATA}/plan.toml)
set(ENV HOROVOD_PLUGIN_PATH=${BUILT_PLUGINS})
set(EXIT 0)
set(EXPECT
  "Plan for 3 rank\\(s\\) on 1 host\\(s\\) \\(ranks per host: 3\\)"
  "\nallreduce\n  0 B \\.\\. 4 KiB +tree \\[rule ")
set(REJECT "hierarchical \\[")
