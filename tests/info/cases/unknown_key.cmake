# A misspelt key: file, line, column, key and the suggestion.
set(ARGS --config ${DATA}/unknown_key.toml)
set(EXIT 1)
set(EXPECT "unknown_key\\.toml:2:1: key 'runtime\\.fusion_treshold': unknown key \\(did you mean 'runtime\\.fusion_threshold'\\?\\)")
