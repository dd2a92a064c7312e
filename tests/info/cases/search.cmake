# Without --config (as horovodrun --check-build runs it), ./horovod.toml is
# found in the working directory.
set(ENV HOME=${DATA}/workdir/no-home XDG_CONFIG_HOME=${DATA}/workdir/no-xdg)
set(EXIT 0)
set(EXPECT
  "file: +\\./horovod\\.toml\n"
  "runtime\\.cache_capacity = 7 +# \\./horovod\\.toml:3:1\n")
