#!/usr/bin/env bash
# bench/fleet: end-to-end fleet throughput on the sim. W `attune worker --drain` processes take N
# items of about one second of sim tuning each (gemm, 120 candidates) from one database and exit
# when the queue is empty; prints items, workers, wall seconds and items per second.
#   bench/fleet/throughput.sh URL WORKERS ITEMS     (URL: an empty PostgreSQL database, or a path)
# Results: bench/results/fleet-*.md.
set -euo pipefail
url=$1 workers=$2 items=$3
attune=${ATTUNE:-$(dirname "$0")/../../build/src/attune}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for i in $(seq 1 "$items"); do echo "gemm:m=$i,n=4096,k=4096"; done > "$dir/shapes.txt"
"$attune" tune --backend sim --shapes "$dir/shapes.txt" --max-candidates 120 --patience 0 \
  --enqueue --db "$url" > /dev/null
start=$(date +%s.%N)
pids=()
for w in $(seq 1 "$workers"); do
  "$attune" worker --backend sim --drain --poll 0.2 --db "$url" > "$dir/worker-$w.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
end=$(date +%s.%N)
done_items=$(grep -ho '^[0-9]* done' "$dir"/worker-*.log | awk '{s+=$1} END {print s}')
python3 -c "w=$end-$start; print(f'workers $workers items $done_items wall_s {w:.1f} items_per_s {$done_items/w:.2f}')"
