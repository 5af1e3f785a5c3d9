#!/usr/bin/env python3
"""bench/attention_decode: attune's tuned decode attention against PyTorch's SDPA backends.

For each cell (dtype, head, kv depth, batch, query heads, KV heads, new tokens) it prints attune's
tuned best and its split baseline (deploy regime, from `attune tune --json`), each PyTorch SDPA
backend (flash, efficient, cuDNN, math) timed the way attune's deploy regime times (what one call adds
to a CUDA graph behind another kernel, replayed after an L2 flush by reads, CUDA events, medians of many
samples; bench/sdpa_timing.py), the best SDPA
backend, attune's ratio to it (< 1: attune faster) and attune's share of the measured read
bandwidth (bytes of K, V, q and o once / time / read bandwidth: issue 16's target figure).

The read bandwidth is a 4 GiB read, where launch, ramp-up and tail cost nothing; a cell's KV cache
is 16-540 MB, read in 5-130 us, where they do. So each cell also gets a size-matched read: the
time a plain streaming read of exactly the cell's K and V bytes takes in the same regime (a CUDA
graph of one fp32 sum over a tensor of those bytes, to one scalar or to a value per 16 KB row, the
faster of the two, replayed after the same L2 flush, median of 200), and attune's time as a share
of it ("% size-matched": 100% is as fast as reading the bytes can be made here). Where that read
itself is under 85% of the read bandwidth, 85% of it is out of any kernel's reach at that size.

GQA: each backend first gets enable_gqa=True with K/V of kv_heads heads; a backend that refuses it
gets K/V expanded to q_heads heads beforehand (repeat_interleave, outside the timing; it then
reads q_heads / kv_heads times the bytes), marked "(rep)". q_len > 1: causal among the new tokens
(torch.nn.attention.bias.causal_lower_right, attune's masking: token i sees kv - q_len + i + 1
keys); a backend that refuses it is "refused".

Usage: bench/attention_decode.py ATTUNE_BINARY COPY_BANDWIDTH_BINARY OUT_DIR [--quick]
Tuning per cell: --max-candidates 80 --patience 25 --time-limit 20 (ATTN_TUNE_S overrides the
time limit, ATTN_SEARCH the search flags, ATTN_CELLS picks cells by index): the whole list takes
about 5 minutes on the H200.
"""
import datetime, json, os, subprocess, sys, time

import torch
from torch.nn.attention.bias import causal_lower_right

from sdpa_timing import BACKENDS, deploy_us, dev, every_backend, props

attune, copy_bw, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
quick = "--quick" in sys.argv[4:]
TUNE_S = os.environ.get("ATTN_TUNE_S", "20")
# dtype, head, kv, batch, q_heads, kv_heads, q_len: Qwen3-8B / Llama-3.1-8B decode (32 query heads,
# 8 KV heads, one token) over depth and batch, the other head sizes, fp16, and GQA / multi-token
# variants.
CELLS = [
    ("bf16", 128, 4096, 1, 32, 8, 1),
    ("bf16", 128, 4096, 8, 32, 8, 1),
    ("bf16", 128, 4096, 32, 32, 8, 1),
    ("bf16", 128, 16384, 8, 32, 8, 1),
    ("bf16", 128, 32768, 1, 32, 8, 1),
    ("bf16", 128, 32768, 16, 32, 8, 1),
    ("bf16", 64, 8192, 16, 32, 8, 1),
    ("bf16", 256, 8192, 4, 32, 8, 1),
    ("fp16", 128, 8192, 8, 32, 8, 1),
    ("bf16", 128, 4096, 8, 32, 4, 4),
    ("bf16", 128, 16384, 4, 64, 8, 2),
]
if quick:
    CELLS = CELLS[:3]
if os.environ.get("ATTN_CELLS"):  # e.g. "0,4": those cells of the list alone
    CELLS = [CELLS[int(i)] for i in os.environ["ATTN_CELLS"].split(",")]
# The search per cell (ATTN_SEARCH overrides it, e.g. "--patience 0": every config of the space).
SEARCH = os.environ.get("ATTN_SEARCH", "--max-candidates 80 --patience 25").split()
def read_bandwidth_gbps():
    """Device read bandwidth: a 4 GiB fp32 sum (reads only), median of 20."""
    x = torch.ones(1 << 30, dtype=torch.float32, device=dev)
    out = torch.empty((), dtype=torch.float32, device=dev)
    for _ in range(3):
        torch.sum(x, dim=0, out=out)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gbps = []
    for _ in range(20):
        start.record()
        torch.sum(x, dim=0, out=out)
        stop.record()
        stop.synchronize()
        gbps.append(x.numel() * 4 / (start.elapsed_time(stop) * 1e-3) / 1e9)
    del x
    gbps.sort()
    return gbps[len(gbps) // 2]


def size_matched_read_us(nbytes):
    """(us, how) of the fastest plain read of `nbytes` in the deploy regime: torch.sum of that many
    bytes of fp32 to one scalar, and to one value per 16 KB row (many blocks, no cross-block
    reduction), each a CUDA graph replayed after the L2 flush (deploy_us), median of 200."""
    x = torch.ones(nbytes // 4, dtype=torch.float32, device=dev)
    one = torch.empty((), dtype=torch.float32, device=dev)
    found = [(deploy_us(lambda: torch.sum(x, dim=0, out=one)), "sum")]
    if x.numel() % 4096 == 0:
        rows = x.view(-1, 4096)
        per_row = torch.empty(rows.shape[0], dtype=torch.float32, device=dev)
        found.append((deploy_us(lambda: torch.sum(rows, dim=1, out=per_row)), "row sums"))
    del x
    torch.cuda.empty_cache()
    return min(found)


copy = json.loads(subprocess.run([copy_bw, "1024"], check=True, capture_output=True, text=True).stdout)
read_gbps = read_bandwidth_gbps()
rows, refusals = [], []
for dtype, head, kv, batch, hq, hkv, ql in CELLS:
    shape = f"{batch}x{kv}x{head}x{hq}x{hkv}x{ql}"
    cell = f"{dtype} h{head} kv{kv} b{batch}" + ("" if (hq, hkv, ql) == (32, 8, 1) else f" {hq}/{hkv} q{ql}")
    t0 = time.time()
    p = subprocess.run([attune, "tune", "--backend", "cuda", "--op", "attention_decode", "--shape", shape,
                        "--dtype", dtype, *SEARCH, "--time-limit", TUNE_S,
                        "--json", "--db", f"{out_dir}/bench-attention.db"], capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        print(f"{cell}: attune failed ({p.returncode}): {p.stderr.strip()[-500:]}", flush=True)
        continue
    pr = json.loads(p.stdout)["problems"][0]
    best, base = pr["best"]["median_us"], pr["baseline"]["median_us"]
    # q_len > 1: causal among the new tokens, token i seeing kv - q_len + i + 1 keys.
    mask = causal_lower_right(ql, kv) if ql > 1 else None
    sd, best_name = every_backend(dtype, batch, hq, hkv, ql, kv, head, attn_mask=mask)
    refusals += [f"{cell} {name}: {note}" for name, (us, note) in sd.items() if us is None]
    timed = {n: u for n, (u, _) in sd.items() if u is not None}
    kv_bytes = 2 * batch * hkv * kv * head * 2
    nbytes = kv_bytes + 2 * batch * hq * ql * head * 2
    read_us, read_how = size_matched_read_us(kv_bytes)
    rows.append(dict(cell=cell, best=best, base=base, sd=sd, best_name=best_name,
                     ratio=best / timed[best_name] if best_name else None,
                     frac=nbytes / (best * 1e-6) / 1e9 / read_gbps, config=pr["best"]["config"],
                     read_us=read_us, read_how=read_how,
                     read_frac=kv_bytes / (read_us * 1e-6) / 1e9 / read_gbps,
                     measured=pr["measured"], wall=wall))
    print(f"{cell}: attune {best:.2f} us ({pr['best']['config']}), baseline {base:.2f} us, "
          + ", ".join(f"{n} {'refused' if u is None else f'{u:.2f}{nt}'}" for n, (u, nt) in sd.items())
          + f", size-matched read {read_us:.2f} us ({read_how}, {kv_bytes / 1e6:.1f} MB: "
          f"{100 * rows[-1]['read_frac']:.1f}% of the read bandwidth)", flush=True)

lines = [f"# bench/attention_decode  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
         f"device: {props.name}; torch {torch.__version__}; read bandwidth (4 GiB fp32 sum) {read_gbps:.0f} GB/s; "
         f"copy bandwidth (cuMemcpyDtoD, read+write) {copy['median_gbps']:.0f} GB/s",
         "All times deploy regime (what one call adds to a CUDA graph behind an empty kernel, replayed after an L2 flush by reads, medians). ratio = attune / best SDPA.",
         "% read BW: K, V, q and o bytes / attune's time / the 4 GiB read bandwidth (the target's figure). "
         "size-matched read us: a plain read of the cell's K and V bytes alone in the same regime "
         "(its own % of the read bandwidth in brackets); % size-matched: that read's time / attune's.",
         "", "| cell | attune best us | baseline us | flash us | efficient us | cudnn us | math us | best SDPA | ratio "
         "| % read BW | size-matched read us | % size-matched | attune config |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
for x in rows:
    cols = []
    for n, _ in BACKENDS:
        us, note = x["sd"][n]
        cols.append("refused" if us is None else f"{us:.2f}{' ' + note if note else ''}")
    read = (f"{x['read_us']:.2f} ({100 * x['read_frac']:.1f}%) | "
            f"{100 * x['read_us'] / x['best']:.1f}%")
    lines.append(f"| {x['cell']} | {x['best']:.2f} | {x['base']:.2f} | " + " | ".join(cols) +
                 f" | {x['best_name'] or '-'} | {x['ratio']:.2f} | {100 * x['frac']:.1f}% | {read} | {x['config']} |"
                 if x["ratio"] is not None else
                 f"| {x['cell']} | {x['best']:.2f} | {x['base']:.2f} | " + " | ".join(cols) +
                 f" | - | - | {100 * x['frac']:.1f}% | {read} | {x['config']} |")
if refusals:
    lines += ["", "Refusals:"] + [f"- {r}" for r in refusals]
text = "\n".join(lines)
print(text)
open(f"{out_dir}/attention_decode.md", "w").write(text + "\n")
