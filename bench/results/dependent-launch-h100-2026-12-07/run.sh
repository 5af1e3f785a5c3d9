#!/usr/bin/env bash
# bench/results/dependent-launch-h100-2026-12-07 (session 40): dependent launch (and its
# weights-first form) against plain launches, interleaved, on the tables of that run (t1.json,
# t8.json), from the repository root on the device with gpu-bundle carried. The weights-first form
# (ATTUNE_DEPENDENT_LAUNCH=weights) exists only in branch exp/weights-early's build; on main that
# value is not "1" and leaves dependent launch off.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-bundle/prefix/lib:$PWD/gpu-bundle/lib:${LD_LIBRARY_PATH:-}
A=$PWD/gpu-bundle/prefix/bin/attune
L1="$PWD/gpu-bundle/bin/layer --model qwen3-embedding-0.6b --batch 1 --tokens 128 --steps 200 --warmup 10 --silu-mul epilogue --rope epilogue --table $PWD/bench/results/dependent-launch-h100-2026-12-07/t1.json"
L8="$PWD/gpu-bundle/bin/layer --model qwen3-embedding-0.6b --batch 8 --tokens 512 --steps 200 --warmup 10 --silu-mul epilogue --rope epilogue --table $PWD/bench/results/dependent-launch-h100-2026-12-07/t8.json"
$L1 > "$OUT/l1-once.txt" 2>&1; tail -3 "$OUT/l1-once.txt"
for pair in "1:$L1:1" "1:$L1:weights" "8:$L8:1" "8:$L8:weights"; do
  s=${pair%%:*}; rest=${pair#*:}; cmd=${rest%:*}; mode=${rest##*:}
  echo "== ${s}: plain vs ATTUNE_DEPENDENT_LAUNCH=$mode"
  $A ab --ref "$cmd" --cand "env ATTUNE_DEPENDENT_LAUNCH=$mode $cmd" --metric layer_us --rounds "${ROUNDS:-12}" 2>&1 | tee "$OUT/ab-$s-$mode.txt" | tail -8
done
