#!/usr/bin/env bash
# tools/gpu-steps with stand-in steps (no GPU): each step's files come back packed as NAME.tgz and
# the steps before a timeout keep theirs; a step is cut at its own MAX_S and at the budget, one
# with too little time left is skipped; bad arguments exit 2 with one line.
set -u
steps="$1/tools/gpu-steps"
OUT=$(mktemp -d)
export OUT
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# shellcheck disable=SC2016  # $OUT is the step's own, expanded when the step runs
log=$(RESERVE_S=1 MIN_STEP_S=1 "$steps" 8 'a echo first > $OUT/a.log' 'b:2 sleep 30' 'c sleep 30' 'd echo never > $OUT/d.log')
echo "$log"
[ "$(tar xzf "$OUT/a.tgz" -O a/a.log)" = first ] || fail "step a's log did not come back packed"
[ ! -e "$OUT/a" ] || fail "step a's folder was left beside its archive"
grep -q '^=== b: rc=124 .*(limit 2 s' <<< "$log" || fail "step b was not cut at its own 2 s"
grep -q '^=== c: rc=124' <<< "$log" || fail "step c was not cut at the budget"
grep -q '^=== d: skipped' <<< "$log" || fail "step d ran with no time left"
[ ! -e "$OUT/d.tgz" ] || fail "the skipped step d left an archive"

for bad in "" "x 'a echo'" "10 nocommand" "10 'bad/name echo'" "10 'a:z echo'" \
  "10 'a echo ran > $OUT/ran' 'b:1x echo'"; do
  err=$(eval "\"$steps\" $bad" 2>&1 > /dev/null)
  rc=$?
  [ "$rc" = 2 ] || fail "'$bad' exited $rc, not 2"
  [ "$(wc -l <<< "$err")" = 1 ] || fail "'$bad' said more than one line: $err"
done
[ ! -e "$OUT/ran" ] || fail "a step ran before a later step was found malformed"
echo ok
