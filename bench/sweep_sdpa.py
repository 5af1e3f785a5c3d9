#!/usr/bin/env python3
"""bench/sweep_sdpa: every cell of an `attune sweep attention_decode` grid against PyTorch's SDPA.

Issue 16 asks decode attention to be no slower than PyTorch's best SDPA backend on every swept
cell. This takes a sweep's rows (JSON lines) and its database and, for each cell of the grid,
compares what libattune-rt dispatches there with each SDPA backend (flash, efficient, cuDNN,
math) timed by bench/sdpa_timing.py, the way attune's deploy regime times (what one call adds to
a CUDA graph behind another kernel, after an L2 flush by reads, medians).

What libattune-rt dispatches at a cell: the config of the table row covering it (a sweep row's
cover: its `point_us` is that config's deploy-regime time at the point, measured by the sweep),
or, where no row covers the cell (the benefit gate or the short-KV drop left it at the
baseline), the split baseline, whose deploy-regime time at the cell is read from the database.
Beside it, the cell's best: the fastest config the sweep measured there in the deploy regime,
what a table without the compression into a default per group (whose regret the sweep bounds,
--max-default-regret-pct) would dispatch.

Usage (tools/gpu-check sweep runs it with SWEEP_SDPA=1):
  bench/sweep_sdpa.py ROWS.jsonl SWEEP.db OUT_DIR --dtype bf16,fp16 --head 64,128,256 \
      --kv 512,4096,16384 --batch 1,2,4,8,16,32 [--q-heads 32 --kv-heads 8 --q-len 1]
SWEEP_SDPA_SAMPLES (default 50, attune's least number of deploy samples) sets the samples per
backend.
"""
import datetime, json, os, sqlite3, sys, time

import torch
from torch.nn.attention.bias import causal_lower_right

from sdpa_timing import every_backend, props

rows_path, db_path, out_dir = sys.argv[1:4]
flags = dict(zip(sys.argv[4::2], sys.argv[5::2]))


def ints(name, default):
    return [int(x) for x in flags.get(name, default).split(",")]


dtypes = flags.get("--dtype", "bf16").split(",")
heads, kvs, batches = ints("--head", "128"), ints("--kv", "4096"), ints("--batch", "1")
hq, hkv, ql = ints("--q-heads", "32")[0], ints("--kv-heads", "8")[0], ints("--q-len", "1")[0]
samples = int(os.environ.get("SWEEP_SDPA_SAMPLES", "50"))


def fmt(x):
    return "-" if x is None else f"{x:.2f}"


def problem(dtype, head, kv, batch):
    return (f"attention_decode:batch={batch},dtype={dtype},head={head},kv={kv},"
            f"kv_heads={hkv},q_heads={hq},q_len={ql}")


# The table's choice at each covered point: (config, time at the point, row kind).
dispatched, baseline_config = {}, None
for line in open(rows_path):
    row = json.loads(line)
    baseline_config = row["baseline_config"]
    for cover in row["covers"]:
        s = cover["sizes"]
        if (s["q_heads"], s["kv_heads"], s["q_len"]) != (hq, hkv, ql):
            continue
        head = row["sizes"]["head"]
        for point, us in zip(cover["points"], cover["point_us"]):
            dispatched[problem(row["dtype"], head, s["kv"], point)] = (row["config"], us, row["kind"])

db = sqlite3.connect(db_path)
# The database's problems of the op by their sizes (its text may carry more keys, in its own order).
problem_keys = {}
for key, text in db.execute("select key, text from problems where op = 'attention_decode'"):
    attrs = dict(kv.split("=", 1) for kv in text.split(":", 1)[1].split(","))
    try:
        problem_keys[problem(attrs.get("dtype", "bf16"), int(attrs["head"]), int(attrs["kv"]),
                             int(attrs["batch"]))] = (key, (int(attrs["q_heads"]), int(attrs["kv_heads"]),
                                                            int(attrs["q_len"])))
    except (KeyError, ValueError):
        continue


def key_of(text):
    """The database's key of a problem of this grid's heads and tokens, or None."""
    key, sizes = problem_keys.get(text, (None, None))
    return key if sizes == (hq, hkv, ql) else None


def baseline_us(text):
    """The split baseline's deploy-regime median at a problem, the latest measured."""
    key = key_of(text)
    if key is None:
        return None
    found = db.execute("select config, median_us from measurements where problem_key = ? and "
                       "regime = 'deploy' and verdict = 'ok' order by id desc", (key,))
    for config, us in found:
        if baseline_config and (config == baseline_config or config.startswith(baseline_config + ",")):
            return us
    return None


def best_us(text):
    """The fastest deploy-regime median of any config the sweep measured at a problem."""
    key = key_of(text)
    if key is None:
        return None
    return db.execute("select min(median_us) from measurements where problem_key = ? and "
                      "regime = 'deploy' and verdict = 'ok'", (key,)).fetchone()[0]


lines_out, worst, slower, unmatched, best_slower = [], None, [], [], []
total = len(dtypes) * len(heads) * len(kvs) * len(batches)


def report(final):
    """sweep_sdpa.md from the cells timed so far (printed too when final)."""
    n = len(lines_out)
    met = n - len(slower) - len(unmatched)
    text = "\n".join([
        f"# bench/sweep_sdpa  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        *([] if final else [f"partial: {n} of {total} cells timed so far (the run had not ended)"]),
        f"device: {props.name}; torch {torch.__version__}; rows {rows_path}; {samples} samples per SDPA "
        f"backend; {time.time() - t0:.0f} s",
        "attune us: what libattune-rt dispatches at the cell (the covering row's config, its deploy time at the "
        "point as the sweep measured it; or the split baseline where no row covers the cell). SDPA backends: "
        "bench/sdpa_timing.py, the same regime. ratio = attune / best SDPA (<= 1: no slower). cell's best: "
        "the fastest config the sweep measured at the cell (deploy regime), what a table without the "
        "compression into a default per group would dispatch; its ratio likewise.",
        "", "| cell | attune us | row | baseline us | flash us | efficient us | cudnn us | math us | best SDPA | ratio "
        "| cell's best us | its ratio | config |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|", *lines_out, "",
        f"No slower than the best SDPA backend: {met} of {n} cells"
        + (f"; worst ratio {worst[0]:.2f} ({worst[1]})" if worst else ""),
        f"The cell's best measured config no slower: {n - len(best_slower) - len(unmatched)} of {n} cells"
        + (f" (slower: {', '.join(best_slower)})" if best_slower else ""),
        *(["Slower:"] + [f"- {s}" for s in slower] if slower else []),
        *([f"Not compared (no attune time or no SDPA backend ran): {', '.join(unmatched)}"] if unmatched else []),
    ])
    if final:
        print(text)
    open(os.path.join(out_dir, "sweep_sdpa.md"), "w").write(text + "\n")


t0 = time.time()
for dtype in dtypes:
    for head in heads:
        for kv in kvs:
            for batch in batches:
                text = problem(dtype, head, kv, batch)
                base = baseline_us(text)
                config, us, kind = dispatched.get(text, (baseline_config, base, "baseline (no row)"))
                # q_len > 1: causal among the new tokens, as bench/attention_decode.py times it.
                mask = causal_lower_right(ql, kv) if ql > 1 else None
                sd, best = every_backend(dtype, batch, hq, hkv, ql, kv, head, samples=samples,
                                         attn_mask=mask)
                timed = {n: u for n, (u, _) in sd.items() if u is not None}
                ratio = us / timed[best] if best and us else None
                cell_best = best_us(text)
                best_ratio = cell_best / timed[best] if best and cell_best else None
                cell = f"{dtype} h{head} kv{kv} b{batch}"
                if best_ratio is not None and best_ratio > 1.0:
                    best_slower.append(cell)
                if ratio is None:
                    unmatched.append(cell)
                else:
                    if worst is None or ratio > worst[0]:
                        worst = (ratio, cell)
                    if ratio > 1.0:
                        slower.append(f"{cell}: {us:.2f} us against {best} {timed[best]:.2f} us ({ratio:.2f})")
                cols = " | ".join("refused" if u is None else f"{u:.2f}{' ' + n if n else ''}"
                                  for u, n in sd.values())
                lines_out.append(f"| {cell} | {fmt(us)} | {kind} | {fmt(base)} | {cols} | {best or '-'} | "
                                 f"{fmt(ratio)} | {fmt(cell_best)} | {fmt(best_ratio)} | {config} |")
                print(lines_out[-1], flush=True)
                # The report is rewritten after every cell, so a call that runs out of time still
                # leaves every cell it timed in sweep_sdpa.md.
                report(final=False)

report(final=True)

