#!/usr/bin/env bash
# run_target.sh FUZZER SECONDS WORKDIR CORPUS
# Runs one libFuzzer binary for SECONDS from CORPUS (read only), new inputs
# and any crash going to WORKDIR, and ends with libFuzzer's figures:
#   fuzz: <name> <execs> runs, <execs/s> execs/s, cov <n>, ft <n>
# A crash leaves WORKDIR/crash-* and fails; tools/fuzz --keep copies it into
# the corpus as a regression input.
set -euo pipefail
fuzzer=$1 seconds=$2 work=$3 corpus=$4
mkdir -p "$work/new"
log="$work/log"
status=0
"$fuzzer" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
  -rss_limit_mb=2048 -artifact_prefix="$work/" "$work/new" "$corpus" \
  >"$log" 2>&1 || status=$?
name=$(basename "$fuzzer")
# The last status line carries the coverage reached.
last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
echo "fuzz: $name ${runs:-?} runs, ${speed:-?} execs/s, cov ${cov:-?}, ft ${ft:-?}"
if [ "$status" -ne 0 ]; then
  tail -60 "$log"
  ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null || true
  exit "$status"
fi
