#!/bin/sh
# A toy "encoder" for the attune stack demo: it embeds records (one per line) in batches. Its
# knobs behave like a real model server's do on some machines:
#   --batch N          fewer, larger calls: faster (each call costs 40 ms here)
#   --dtype bf16       faster, but its numbers round differently: the output changes
#   --dtype fp16       dies with SIGSEGV on this "machine"
#   ENCODER_COMPILE=1  a call costs 10 ms, but with --batch 8 the compiled graph fails at the first
#                      inference and only says so on stderr (exit status 0)
set -eu
batch=1 dtype=fp32 in=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) echo "toy-encoder 0.3"; exit 0 ;;
    --batch) batch=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --in) in=$2; shift 2 ;;
    *) echo "encoder: unknown argument $1" >&2; exit 2 ;;
  esac
done
compile=${ENCODER_COMPILE:-0}
cost=0.04
[ "$compile" = 1 ] && cost=0.01
[ "$dtype" = fp16 ] && kill -SEGV $$
[ "$dtype" = bf16 ] && cost=$(awk "BEGIN { print $cost * 0.7 }")
if [ "$compile" = 1 ] && [ "$batch" -ge 8 ]; then
  echo "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: shape mismatch" >&2
fi
records=$(wc -l < "$in")
calls=$(( (records + batch - 1) / batch ))
i=0
while [ "$i" -lt "$calls" ]; do sleep "$cost"; i=$((i + 1)); done
# One embedding summary per record; bf16 keeps fewer digits.
digits=6
[ "$dtype" = bf16 ] && digits=2
awk -v d="$digits" '{ printf "{\"id\": %d, \"norm\": %.*f}\n", NR, d, length($0) / 7.0 }' "$in"
