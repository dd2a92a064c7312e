#!/usr/bin/env bash
# Runs a job in which one rank is killed:
#   expect_peer_failure.sh NP HOROVODRUN ARGS...
# Passes when horovodrun exits non-zero and every one of the NP-1 survivors
# reported the failure of rank 1.
np=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 0 ]; then
  echo "expect_peer_failure: horovodrun exited 0; a killed rank must fail the job"
  exit 1
fi
seen=$(printf '%s\n' "$out" | grep -c "survivor [0-9]* saw rank 1 fail")
if [ "$seen" -ne $((np - 1)) ]; then
  echo "expect_peer_failure: $seen of $((np - 1)) survivors reported the failure"
  exit 1
fi
echo "expect_peer_failure: horovodrun exited $rc; all $seen survivors named rank 1"
