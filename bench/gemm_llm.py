#!/usr/bin/env python3
"""bench/gemm_llm: attune's tuned GEMM against cuBLASLt on the GEMM shapes of Qwen3-0.6B and Qwen3-8B.

Per shape (C[M,N] = A[M,K] . W[N,K]^T, bf16, fp32 accumulation), all in the deploy regime (cold L2)
in one run on one device:
  pass 1: every cuBLASLt heuristic algorithm as returned (--pin lt_split=0 --pin lt_tile=0), each
          re-measured in the deploy regime (--deploy-band 1000);
  pass 2: attune's search over the whole space (cuBLASLt variants and attune's own kernels).
Prints cuBLASLt default (its first heuristic choice, the call most users make), the best heuristic
algorithm, attune's tuned time and winning kernel, TFLOP/s, GB/s and the ratios, and the tuner's
throughput (new candidates measured per second).
Usage: bench/gemm_llm.py ATTUNE_BINARY OUT_DIR [--models 8b,0.6b] [--m 1,2,...] [--max-candidates N] [--patience N]
                         [--decode-max-candidates N] [--decode-patience N] (the budget for M <= 16)
       bench/gemm_llm.py --list-specs [--models ...] [--m ...]   (the shapes' problem specs, one per line)
"""
import argparse, csv, datetime, json, math, sqlite3, subprocess, time

ap = argparse.ArgumentParser()
ap.add_argument("attune", nargs="?"); ap.add_argument("out", nargs="?")
ap.add_argument("--list-specs", action="store_true")
ap.add_argument("--models", default="0.6b,8b")
ap.add_argument("--m", default="1,2,4,8,16,32,64,128,256,512,2048,8192")
ap.add_argument("--max-candidates", type=int, default=60)
ap.add_argument("--patience", type=int, default=20)
ap.add_argument("--strategy", default="mcts")
# The decode shapes (M <= 16, the geomean target) may get their own, larger budget.
ap.add_argument("--decode-max-candidates", type=int)
ap.add_argument("--decode-patience", type=int)
args = ap.parse_args()
if not args.list_specs and not args.out:
    ap.error("ATTUNE_BINARY and OUT_DIR are required")

# (N, K) of each projection; k and v share a shape, as do gate and up, and q and o in the 8B.
MODELS = {
    "0.6b": {"q": (2048, 1024), "kv": (1024, 1024), "o": (1024, 2048), "gate_up": (3072, 1024), "down": (1024, 3072)},
    "8b": {"q_o": (4096, 4096), "kv": (1024, 4096), "gate_up": (12288, 4096), "down": (4096, 12288)},
}
db = f"{args.out}/bench-gemm.db"

def tune(spec, extra):
    t0 = time.time()
    p = subprocess.run([args.attune, "tune", "--backend", "cuda", "--problem", spec, "--json", "--db", db] + extra,
                       capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{spec}: attune exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)["problems"][0], time.time() - t0

def write_table(final=False):
    hdr = ("| model | proj | M | N | K | cuBLASLt default us | best heuristic us | attune us | winner | TFLOP/s | GB/s | "
           "default/attune | best-heur/attune |")
    lines = [f"# bench/gemm_llm  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC", "", hdr, "|" + "---|" * 13]
    for r in rows:
        lines.append(f"| {r['model']} | {r['proj']} | {r['m']} | {r['n']} | {r['k']} | {r['default']:.2f} | {r['heur']:.2f} | "
                     f"{r['tuned']:.2f} | {r['kernel']} | {r['tflops']:.1f} | {r['gbps']:.0f} | {r['r_default']:.3f} | {r['r_heur']:.3f} |")
    dec = [r["r_default"] for r in rows if r["m"] <= 16]
    if dec:
        lines.append(f"\ngeomean default/attune over decode shapes with M <= 16: {math.exp(sum(map(math.log, dec)) / len(dec)):.3f}x "
                     f"({len(dec)} shapes)")
    if rows:
        lines.append(f"min default/attune over all shapes: {min(r['r_default'] for r in rows):.3f}")
    lines.append(f"tuner throughput: {total_measured} new candidates in {total_wall:.0f} s = {total_measured / max(total_wall, 1e-9):.1f}/s")
    con = sqlite3.connect(db)
    n_rows, discarded, lo, hi = con.execute(
        "SELECT count(*), count(discarded), min(sm_clock_mhz), max(sm_clock_mhz) FROM measurements").fetchone()
    # NVML's reasons that slow the clock (gpu_idle and applications_clocks do not).
    slowing = {"sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"}
    reasons = {}
    for (t,) in con.execute("SELECT throttle FROM measurements WHERE throttle IS NOT NULL"):
        for name in set(t.split(",")) & slowing:
            reasons[name] = reasons.get(name, 0) + 1
    con.close()
    lines.append(f"measurements: {n_rows} rows, {discarded} discarded after anchor drift, SM clock {lo}-{hi} MHz, "
                 f"clock-slowing reasons: {', '.join(f'{k} {v} rows' for k, v in sorted(reasons.items())) or 'none'}")
    text = "\n".join(lines)
    if final:
        print(text)
    open(f"{args.out}/gemm_llm.md", "w").write(text + "\n")
    # Every shape's winning config in full, for a table or a later look.
    with open(f"{args.out}/gemm_llm.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "proj", "m", "n", "k", "default_us", "best_heuristic_us", "attune_us", "tuning_s", "config"])
        for r in rows:
            w.writerow([r["model"], r["proj"], r["m"], r["n"], r["k"], f"{r['default']:.3f}", f"{r['heur']:.3f}",
                        f"{r['tuned']:.3f}", f"{r['wall_s']:.1f}", r["config"]])


rows, total_measured, total_wall = [], 0, 0.0
# Smallest M first: the decode shapes (the M <= 16 target) are done before the long prefill ones,
# and the table is rewritten after every shape, so a run cut short still leaves what it measured.
shapes = sorted(((m, model, proj, n, k) for model in args.models.split(",") for proj, (n, k) in MODELS[model].items()
                 for m in map(int, args.m.split(","))), key=lambda s: (s[0], s[1], s[2]))
spec_of = lambda m, n, k: f"gemm:m={m},n={n},k={k},dtype=bf16"
if args.list_specs:
    print("\n".join(spec_of(m, n, k) for m, _, _, n, k in shapes))
    raise SystemExit(0)
for m, model, proj, n, k in shapes:
    spec = spec_of(m, n, k)
    try:
        p1, w1 = tune(spec, ["--strategy", "grid", "--patience", "0", "--pin", "kernel=cublaslt",
                             "--pin", "lt_split=0", "--pin", "lt_tile=0", "--deploy-band", "1000"])
        decode = m <= 16
        budget = (args.decode_max_candidates if decode and args.decode_max_candidates else args.max_candidates,
                  args.decode_patience if decode and args.decode_patience is not None else args.patience)
        p2, w2 = tune(spec, ["--strategy", args.strategy, "--seed", "0", "--patience", str(budget[1]),
                             "--max-candidates", str(budget[0])])
    except RuntimeError as e:
        print(e); continue
    total_measured += p1["measured"] + p2["measured"]; total_wall += w1 + w2
    key = p2["structural_key"]
    con = sqlite3.connect(db)
    heur = con.execute("SELECT min(median_us) FROM measurements WHERE problem_key=? AND regime='deploy' AND "
                       "verdict='ok' AND discarded IS NULL AND config LIKE 'kernel=cublaslt,%lt_split=0,lt_tile=0,%'",
                       (key,)).fetchone()[0]
    best_all = con.execute("SELECT config, min(median_us) FROM measurements WHERE problem_key=? AND regime='deploy' "
                           "AND verdict='ok' AND discarded IS NULL", (key,)).fetchone()
    con.close()
    default = p2["baseline"]["median_us"]
    tuned_cfg, tuned = best_all
    flops, nbytes = 2.0 * m * n * k, 2.0 * (m * k + n * k + m * n)
    rows.append(dict(model=model, proj=proj, m=m, n=n, k=k, default=default, heur=heur, tuned=tuned, wall_s=w1 + w2,
                     kernel=tuned_cfg.split(",")[0].split("=")[1], config=tuned_cfg,
                     tflops=flops / tuned / 1e6, gbps=nbytes / tuned / 1e3,
                     r_default=default / tuned, r_heur=heur / tuned))
    write_table()


write_table(final=True)
