#!/bin/sh
# A fake stack provider whose behaviour is fixed by its --profile, so tests know which candidate
# must win and why each other one must be rejected. It reads its input records (one per line) and
# prints one output line per record.
#
#   fake_provider.sh --profile P --in FILE [--state DIR] [--out FILE] [--rps N]
#
# Profiles (sleep = how slow it is):
#   instant  no sleep, correct output
#   base     sleep 0.3, correct output           fast     sleep 0.05, correct output
#   medium   sleep 0.15, correct output          wrong    sleep 0.01, last record's output changed
#   crash1   sleep 0.01; the warm-up is clean, the first timed run exits 3 (needs --state)
#   telltale sleep 0.01, correct output, exit 0; the first timed run prints a telltale on stderr
#   signal   kills itself with SIGSEGV           hang     starts `sleep 30` and waits for it
#   fail     exits 1 at once                     jitter   correct records plus a line with the time
#   json     writes JSON lines {"id", "text", "elapsed"} to --out (elapsed differs on every run)
# --rps N prints "rps=N" on stdout (for throughput: {regex: ...}).
# --version prints "fake-provider 1.0".
set -u
profile=base in="" state="" out="" rps=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) echo "fake-provider 1.0"; exit 0 ;;
    --profile) profile=$2; shift 2 ;;
    --in) in=$2; shift 2 ;;
    --state) state=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rps) rps=$2; shift 2 ;;
    *) echo "fake_provider: unknown argument $1" >&2; exit 64 ;;
  esac
done

# How many times this profile has run (1 = the warm-up, 2 = the first timed run).
run=1
if [ -n "$state" ]; then
  mkdir -p "$state"
  f="$state/count.$profile"
  [ -f "$f" ] && run=$(( $(cat "$f") + 1 ))
  echo "$run" > "$f"
fi

records() { sed 's/^/ok:/' "$in"; }

case "$profile" in
  instant) records ;;
  base) sleep 0.3; records ;;
  fast) sleep 0.05; records ;;
  medium) sleep 0.15; records ;;
  wrong) sleep 0.01; records | sed '$ s/^ok:/ok:CHANGED:/' ;;
  crash1)
    sleep 0.01
    if [ "$run" -eq 2 ]; then echo "fake_provider: out of memory on the first timed run" >&2; exit 3; fi
    records ;;
  telltale)
    sleep 0.01
    if [ "$run" -eq 2 ]; then echo "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised" >&2; fi
    records ;;
  signal) records; kill -SEGV $$ ;;
  hang) sleep 30 & wait ;;
  fail) echo "fake_provider: cannot open model" >&2; exit 1 ;;
  jitter) records; echo "finished at $(date +%s%N)" ;;
  json)
    i=0
    : > "$out"
    while IFS= read -r line; do
      i=$((i + 1))
      printf '{"id": %d, "text": "%s", "elapsed": %s}\n' "$i" "$line" "$(date +%s%N)" >> "$out"
    done < "$in" ;;
  *) echo "fake_provider: unknown profile $profile" >&2; exit 64 ;;
esac
[ -n "$rps" ] && echo "rps=$rps"
exit 0
