#!/bin/sh
# expect_in_log.sh PATTERN COMMAND...: runs the command, passes its output
# through, and fails unless it succeeds and its output matches PATTERN
# (an extended regular expression).
pattern=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
status=$?
cat "$log"
if [ "$status" -ne 0 ]; then
  echo "expect_in_log.sh: the command failed (exit $status)"
  exit 1
fi
if ! grep -Eq "$pattern" "$log"; then
  echo "expect_in_log.sh: no line matches '$pattern'"
  exit 1
fi
exit 0
