#!/usr/bin/env python3
"""bench/layer_ops: tuned rope, silu_mul and gemm_rope (issue 17) against their baselines and the
memory floor.

Tunes each shape with attune (grid over the whole space, gemm_rope's by the default strategy; the
best re-measured in the deploy regime), then prints per shape: the baseline's and the tuned deploy-regime time, the bytes each
must move once (inputs read, outputs written), the floor those bytes take at the device's measured
copy bandwidth, and the tuned time's distance to it. Shapes: Qwen3-Embedding-0.6B (hidden 1024,
16 query heads, 8 KV heads, head 128, intermediate 3072, theta 1e6, q/k norm), a prefill of
8 x 512 tokens and a batch-8 decode step at KV 2048; gemm_rope (the QKV GEMM with the q/k norm and
RoPE in its epilogue; its baseline is cuBLASLt's matmul, then a RoPE kernel) at prefills of 1 x 128
and 8 x 512 tokens.
Usage: bench/layer_ops.py ATTUNE_BINARY COPY_BANDWIDTH_BINARY OUT_DIR [TIME_LIMIT_S]
(TIME_LIMIT_S: attune tune --time-limit per shape, default 60; the grid stops there, best so far.)
"""
import datetime, json, subprocess, sys, time

attune, copy_bw, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
limit = sys.argv[4] if len(sys.argv) > 4 else "60"
QH, KVH, HEAD, INTER = 16, 8, 128, 3072
SHAPES = [  # (label, problem, bytes moved once)
    ("rope prefill 8x512", f"rope:batch=8,seq=512,kv=512,q_heads={QH},kv_heads={KVH},head={HEAD},"
     "theta=1000000,qk_norm=1", 2 * 8 * 512 * (QH + 2 * KVH) * HEAD * 2),
    ("rope decode b8 kv2048", f"rope:batch=8,seq=1,kv=2048,q_heads={QH},kv_heads={KVH},head={HEAD},"
     "theta=1000000,qk_norm=1", 2 * 8 * (QH + 2 * KVH) * HEAD * 2),
    ("silu_mul prefill 4096 rows", f"silu_mul:rows=4096,inter={INTER}", 4096 * INTER * 2 * 3),
    ("silu_mul decode 8 rows", f"silu_mul:rows=8,inter={INTER}", 8 * INTER * 2 * 3),
]
HIDDEN, QKV_N = 1024, (QH + 2 * KVH) * HEAD
for batch, seq in ((1, 128), (8, 512)):  # x and W read once, q, k and v written once
    SHAPES.append((f"gemm_rope prefill {batch}x{seq}",
                   f"gemm_rope:batch={batch},seq={seq},kv={seq},q_heads={QH},kv_heads={KVH},"
                   f"head={HEAD},theta=1000000,hidden={HIDDEN},qk_norm=1",
                   (batch * seq * HIDDEN + QKV_N * HIDDEN + batch * seq * QKV_N) * 2))
copy = json.loads(subprocess.run([copy_bw, "1024"], check=True, capture_output=True, text=True).stdout)
gbps_copy = copy["median_gbps"]
rows = []
for label, spec, nbytes in SHAPES:
    t0 = time.time()
    # rope's and silu_mul's spaces are walked whole; gemm_rope's (over 1000 configs, its wgmma
    # configs last in grid order) is searched by the default strategy in the same time.
    strategy = [] if spec.startswith("gemm_rope") else ["--strategy", "grid"]
    cmd = [attune, "tune", "--backend", "cuda", "--problem", spec, *strategy, "--patience", "0",
           "--time-limit", limit, "--json", "--db", f"{out_dir}/bench-layer-ops.db"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        print(f"{spec}: attune failed ({p.returncode}): {p.stderr.strip()[-800:]}", flush=True)
        continue
    pr = json.loads(p.stdout)["problems"][0]
    best, base = pr["best"]["median_us"], pr["baseline"]["median_us"]
    floor = nbytes / (gbps_copy * 1e9) * 1e6
    rows.append(dict(label=label, spec=spec, kib=nbytes / 1024, baseline_us=base, tuned_us=best,
                     speedup=base / best, floor_us=floor, of_floor=floor / best,
                     evaluated=pr["evaluated"], wall=wall, config=pr["best"]["config"],
                     stopped=pr.get("stopped_by", ""),
                     verdicts=pr.get("verdicts", {})))
    print(f"{label}: baseline {base:.2f} us, tuned {best:.2f} us, floor {floor:.2f} us "
          f"({pr['evaluated']} configs in {wall:.0f} s, verdicts {pr.get('verdicts')})", flush=True)
lines = [f"# bench/layer_ops  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
         f"device copy bandwidth (cuMemcpyDtoD, 1 GiB, read+write): {gbps_copy:.0f} GB/s median; "
         "floor = bytes moved once / that bandwidth",
         "", "| shape | KiB moved | baseline us | tuned us | speedup | floor us | floor / tuned | configs | stopped by | tune s | tuned config |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
for x in rows:
    lines.append(f"| {x['label']} | {x['kib']:.0f} | {x['baseline_us']:.2f} | {x['tuned_us']:.2f} | "
                 f"{x['speedup']:.2f}x | {x['floor_us']:.2f} | {100 * x['of_floor']:.0f}% | {x['evaluated']} | {x['stopped']} | "
                 f"{x['wall']:.0f} | {x['config']} |")
lines += ["", "Problems:"] + [f"- {x['label']}: `{x['spec']}`" for x in rows]
text = "\n".join(lines)
print(text)
open(f"{out_dir}/layer_ops.md", "w").write(text + "\n")
