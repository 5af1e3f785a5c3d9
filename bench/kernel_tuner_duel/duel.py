#!/usr/bin/env python3
"""attune and Kernel Tuner 1.5 tune Kernel Tuner's matmul example on one GPU, in one run.

Each tool runs as its own process, as a user would start it (Python's or attune's start, the
data, the reference and every build included), with a compile cache of its own that starts empty
(CUPY_CACHE_DIR, ATTUNE_CACHE_DIR), in this order:
  1. Kernel Tuner, brute force over the 40 configs (kt_matmul.py, CuPy backend);
  2. attune's default strategy (mcts, default patience);
  3. attune --strategy grid --patience 0 (every config, as brute force);
  4. one config end to end: Kernel Tuner and attune each tune only the other's winner (attune
     measures its baseline first, as it always does).
Printed (and written to --out/duel.md): configs evaluated, wall time, wall time per config,
seconds between consecutive new configs (median), time to reach the space's best (the fastest
config by that tool's own numbers), the best config and time, and each tool's winner as the other
timed it. Needs kernel_tuner (and cupy) importable by --python.
"""
import argparse
import datetime as dt
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

KNOBS = ["block_size_x", "block_size_y", "tile_size_x", "tile_size_y"]


def config_text(d):
    return ",".join(f"{k}={d[k]}" for k in KNOBS)


def epoch(ts):
    """An ISO timestamp (attune's '...Z' or Kernel Tuner's) as seconds since the epoch."""
    t = dt.datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def run(cmd, env=None, log=None):
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.time() - t0
    if log:
        with open(log, "w") as f:
            f.write(" ".join(cmd) + "\n--- stdout\n" + p.stdout + "\n--- stderr\n" + p.stderr)
    if p.returncode != 0:
        sys.exit(f"duel: {' '.join(cmd[:3])} ... exited {p.returncode}: {p.stderr[-2000:]}")
    return t0, wall, p.stdout


def kernel_tuner(a, out, name, only=None):
    env = dict(os.environ, CUPY_CACHE_DIR=tempfile.mkdtemp(prefix="duel-cupy-"))
    res = os.path.join(out, f"{name}.json")
    cmd = [a.python, os.path.join(os.path.dirname(__file__), "kt_matmul.py"), "--kernel",
           a.kernel, "--out", res, "--cache", os.path.join(out, f"{name}-cache.json")]
    if only:
        cmd += ["--only", only]
    t0, wall, _ = run(cmd, env, os.path.join(out, f"{name}.log"))
    data = json.load(open(res))
    rows = []
    for r in data["results"]:
        ok = isinstance(r.get("time"), (int, float))
        rows.append({"config": config_text(r), "us": r["time"] * 1000 if ok else None,
                     "at": epoch(r["timestamp"]) - t0 if "timestamp" in r else None})
    return {"tool": "Kernel Tuner 1.5", "strategy": "brute_force", "wall": wall, "rows": rows,
            "times": {x["config"]: x["us"] for x in rows if x["us"]}}


def attune(a, out, name, extra):
    db = os.path.join(out, f"{name}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    env = dict(os.environ, ATTUNE_CACHE_DIR=tempfile.mkdtemp(prefix="duel-cubin-"))
    cmd = [a.attune, "tune", "--kernel", a.kernel, "--spec", a.spec, "--db", db, "--json"] + extra
    t0, wall, stdout = run(cmd, env, os.path.join(out, f"{name}.log"))
    report = json.loads(stdout)
    con = sqlite3.connect(db)
    rows, seen = [], set()
    # Every config's first ranking measurement, in the order measured; the deploy regime's time
    # is what attune ranks and reports by.
    for config, regime, verdict, median, created in con.execute(
            "SELECT config, regime, verdict, median_us, created_at FROM measurements "
            "ORDER BY id"):
        if regime == "rank" and config not in seen:
            seen.add(config)
            rows.append({"config": config, "at": epoch(created) - t0,
                         "us": median if verdict == "ok" else None})
    deploy = {c: m for c, m in con.execute(
        "SELECT config, median_us FROM measurements WHERE regime = 'deploy' AND verdict = 'ok' "
        "AND discarded IS NULL ORDER BY id")}
    rank = {r["config"]: r["us"] for r in rows if r["us"]}
    p = report["problems"][0]
    strategy = report["run"]["strategy"] + (" " + " ".join(extra) if extra else "")
    return {"tool": "attune", "strategy": strategy, "wall": wall, "rows": rows, "times": rank,
            "deploy": deploy, "best_config": p["best"]["config"], "report": p}


def summarize(r):
    timed = [x for x in r["rows"] if x["us"]]
    best = min(timed, key=lambda x: x["us"]) if timed else None
    ats = [x["at"] for x in r["rows"] if x["at"] is not None]
    gaps = [b - a for a, b in zip(ats, ats[1:])]
    n = len(r["rows"])
    return {
        "evaluated": n,
        "per_config": r["wall"] / n if n else float("nan"),
        "gap": statistics.median(gaps) if gaps else float("nan"),
        "to_best": best["at"] if best and best["at"] is not None else float("nan"),
        "best": best["config"] if best else "-",
        "best_us": best["us"] if best else float("nan"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attune", required=True)
    ap.add_argument("--kernel", required=True, help="Kernel Tuner's matmul.cu")
    ap.add_argument("--spec", default=os.path.join(os.path.dirname(__file__), "matmul.yaml"))
    ap.add_argument("--python", default=sys.executable, help="the Python that has kernel_tuner")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    a.kernel = os.path.abspath(a.kernel)
    os.makedirs(a.out, exist_ok=True)

    kt = kernel_tuner(a, a.out, "kt")
    mcts = attune(a, a.out, "attune-mcts", [])
    grid = attune(a, a.out, "attune-grid", ["--strategy", "grid", "--patience", "0"])
    runs = [kt, mcts, grid]
    s = {id(r): summarize(r) for r in runs}

    lines = ["| tool | strategy | configs evaluated | wall s | wall s / config | "
             "median s between new configs | s to its best | its best config | best us (own) | "
             "timed by the other tool us |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        x = s[id(r)]
        other = grid if r is kt else kt
        by_other = other["times"].get(x["best"])
        lines.append(
            f"| {r['tool']} | {r['strategy']} | {x['evaluated']} | {r['wall']:.1f} | "
            f"{x['per_config']:.3f} | {x['gap']:.3f} | {x['to_best']:.1f} | {x['best']} | "
            f"{x['best_us']:.1f} | {by_other if by_other is None else round(by_other, 1)} |")
    if mcts.get("report"):
        p = mcts["report"]
        lines.append("")
        lines.append(f"attune mcts report: best {p['best']['config']} deploy "
                     f"{p['best']['median_us']:.1f} us, stopped_by {p['stopped_by']}, "
                     f"evaluated {p['evaluated']}, verdicts {json.dumps(p['verdicts'])}")
        if p.get("objective"):
            lines.append(f"attune mcts objective: {json.dumps(p['objective'])}; best metrics "
                         f"{json.dumps(p['best'].get('metrics'))}")

    # One config end to end: each tool tunes only the other's winner.
    kt_best = s[id(kt)]["best"]
    pins = []
    for kv in kt_best.split(","):
        pins += ["--pin", kv]
    one_att = attune(a, a.out, "attune-one", ["--strategy", "grid", "--patience", "0"] + pins)
    one_kt = kernel_tuner(a, a.out, "kt-one", only=s[id(grid)]["best"])
    lines += ["", "| one config end to end | configs | wall s |", "|---|---|---|",
              f"| Kernel Tuner ({s[id(grid)]['best']}) | {len(one_kt['rows'])} | "
              f"{one_kt['wall']:.1f} |",
              f"| attune ({kt_best}, after its baseline) | {len(one_att['rows'])} | "
              f"{one_att['wall']:.1f} |"]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(a.out, "duel.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
