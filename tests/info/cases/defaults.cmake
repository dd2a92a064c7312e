# --defaults prints the documented horovod.toml of the schema.
set(ARGS --defaults)
set(EXIT 0)
set(EXPECT "\n\\[runtime\\]\n" "\nfusion_threshold = \"128MiB\"\n"
  "# Environment: HOROVOD_CYCLE_TIME \\(milliseconds\\)\\.\ncycle_time = \"1ms\"\n")
