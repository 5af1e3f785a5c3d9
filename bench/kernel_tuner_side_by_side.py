#!/usr/bin/env python3
"""Kernel Tuner's own strategies on the same recorded spaces, in its simulation mode.

Runs random_sample, genetic_algorithm, dual_annealing and diff_evo on each Kernel Tuner cache in
--datasets for --seeds seeds at a budget of --budget unique evaluations, every cached config
allowed (restrictions = "is in the cache"), so a failed config costs an evaluation as it does in a
real run. Prints (and with --out writes) Markdown table rows in bench/search_replay's format.
Started by `search_replay --with-kernel-tuner` through kernel_tuner_side_by_side.sh.
"""
import argparse
import gzip
import json
import math
import os
import statistics
import sys
import tempfile
import warnings

import numpy as np
from kernel_tuner import tune_kernel

STRATEGIES = ["random_sample", "genetic_algorithm", "dual_annealing", "diff_evo"]
CHECKPOINTS = [50, 100, 200, 500]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def run_one(cache_path, data, strategy, seed, budget):
    keys = data["tune_params_keys"]
    cache = data["cache"]
    tune_params = {k: data["tune_params"][k] for k in keys}

    def recorded(p):
        return ",".join(str(p[k]) for k in keys) in cache

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = tune_kernel(
            data["kernel_name"], "__global__ void k() {}", data["problem_size"], [], tune_params,
            restrictions=recorded, strategy=strategy, cache=cache_path, simulation_mode=True,
            strategy_options={"max_fevals": budget}, seed=seed, quiet=True, verbose=False,
            objective="time")
    seen, best, trace = set(), math.inf, []
    for r in results:
        if r is None:
            continue
        key = ",".join(str(r[k]) for k in keys)
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time")
        if isinstance(t, (int, float)) and math.isfinite(t) and t < best:
            best = t
        trace.append(best)
        if len(trace) >= budget:
            break
    return trace


def first_within(trace, optimum, frac):
    for i, b in enumerate(trace):
        if b <= optimum * (1 + frac):
            return i + 1
    return math.inf


def fmt_evals(m, budget):
    return f"not reached (>{budget})" if not math.isfinite(m) else f"{m:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", required=True)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--only", default="")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    files = sorted(f for f in os.listdir(a.datasets)
                   if (f.endswith(".json") or f.endswith(".json.gz")) and a.only in f)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            data = load(os.path.join(a.datasets, f))
            name = f[:-8] if f.endswith(".json.gz") else f[:-5]
            # Kernel Tuner reads plain JSON; give it its own copy (it may append to caches).
            cache_path = os.path.join(tmp, name + ".json")
            with open(cache_path, "w") as out:
                json.dump(data, out)
            times = [v["time"] for v in data["cache"].values() if isinstance(v["time"], (int, float))]
            optimum = min(times)
            for strategy in a.strategies.split(","):
                to1, to2, frac = [], [], {c: [] for c in CHECKPOINTS}
                for seed in range(a.first_seed, a.first_seed + a.seeds):
                    np.random.seed(seed)
                    trace = run_one(cache_path, data, strategy, seed, a.budget)
                    to1.append(first_within(trace, optimum, 0.01))
                    to2.append(first_within(trace, optimum, 0.02))
                    for c in CHECKPOINTS:
                        b = trace[min(c, len(trace)) - 1] if trace else math.inf
                        frac[c].append(optimum / b if math.isfinite(b) else 0.0)
                reached = sum(math.isfinite(x) for x in to2)
                row = (f"| {name} | {len(data['cache'])} | kernel_tuner {strategy} | "
                       f"{fmt_evals(statistics.median(to1), a.budget)} | "
                       f"{fmt_evals(statistics.median(to2), a.budget)} | {reached}/{len(to2)} | " +
                       " | ".join(f"{statistics.mean(frac[c]):.3f}" for c in CHECKPOINTS) + " |")
                print(row, file=sys.stderr, flush=True)
                lines.append(row)
    table = ("| space | configs | strategy | median evals to 1% | median evals to 2% | reached 2% | "
             "optimum frac @50 | @100 | @200 | @500 |\n"
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n" + "\n".join(lines) + "\n")
    print(table)
    if a.out:
        with open(a.out, "w") as out:
            out.write(table)


if __name__ == "__main__":
    main()
