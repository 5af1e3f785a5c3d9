#!/usr/bin/env python3
"""bench/rmsnorm: tuned rmsnorm against the device's measured device-to-device copy bandwidth.

Tunes each shape with attune (grid over the whole space, deploy regime for the best), then prints
per shape: baseline and tuned deploy-regime time, achieved bandwidth (bytes read + written once),
its fraction of the copy bandwidth, and the tuner's throughput (new candidates measured per second).
Usage: bench/rmsnorm.py ATTUNE_BINARY COPY_BANDWIDTH_BINARY OUT_DIR
"""
import datetime, json, subprocess, sys, time

attune, copy_bw, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
SHAPES = [  # rows, hidden, residual: 64 MiB and above per tensor pass, and decode-sized ones
    (16, 4096, 1), (128, 4096, 1), (2048, 4096, 0), (8192, 4096, 0), (8192, 4096, 1),
    (16384, 4096, 0), (32768, 8192, 0), (16384, 5120, 1),
]
copy = json.loads(subprocess.run([copy_bw, "1024"], check=True, capture_output=True, text=True).stdout)
rows = []
for r, h, res in SHAPES:
    spec = f"rmsnorm:rows={r},hidden={h},residual={res}"
    t0 = time.time()
    p = subprocess.run([attune, "tune", "--backend", "cuda", "--problem", spec, "--strategy", "grid",
                        "--patience", "0", "--json", "--db", f"{out_dir}/bench-rmsnorm.db"],
                       capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        print(f"{spec}: attune failed ({p.returncode}): {p.stderr.strip()[-500:]}")
        continue
    pr = json.loads(p.stdout)["problems"][0]
    tensors = 4 if res else 2  # x (+r) read, y (+h) written
    nbytes = r * h * 2 * tensors + h * 2
    best, base = pr["best"]["median_us"], pr["baseline"]["median_us"]
    rows.append(dict(shape=f"{r}x{h}{' +res' if res else ''}", mib=nbytes / 2**20, baseline_us=base, tuned_us=best,
                     gbps=nbytes / (best * 1e-6) / 1e9, frac=nbytes / (best * 1e-6) / 1e9 / copy["median_gbps"],
                     speedup=base / best, measured=pr["measured"], cands_per_s=pr["measured"] / wall,
                     config=pr["best"]["config"]))
lines = [f"# bench/rmsnorm  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
         f"device copy bandwidth (cuMemcpyDtoD, 1 GiB, read+write): {copy['median_gbps']:.0f} GB/s median",
         "", "| shape | MiB moved | baseline us | tuned us | speedup | GB/s | of copy BW | new cands/s | tuned config |",
         "|---|---|---|---|---|---|---|---|---|"]
for x in rows:
    lines.append(f"| {x['shape']} | {x['mib']:.1f} | {x['baseline_us']:.2f} | {x['tuned_us']:.2f} | {x['speedup']:.2f}x | "
                 f"{x['gbps']:.0f} | {100*x['frac']:.1f}% | {x['cands_per_s']:.1f} | {x['config']} |")
text = "\n".join(lines)
print(text)
open(f"{out_dir}/rmsnorm.md", "w").write(text + "\n")
