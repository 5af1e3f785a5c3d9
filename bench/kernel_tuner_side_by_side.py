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
import random
import statistics
import sys
import tempfile
import warnings

import numpy as np
from kernel_tuner import tune_kernel
from kernel_tuner.searchspace import Searchspace

# Seven of Kernel Tuner's strategies, and random sampling as the floor.
STRATEGIES = ["random_sample", "genetic_algorithm", "dual_annealing", "diff_evo",
              "simulated_annealing", "pso", "greedy_ils", "mls"]
CHECKPOINTS = [50, 100, 200, 500]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def run_one(cache_path, data, strategy, seed, budget, passing):
    """One seed's trace of best-so-far times; `passing`: the space's configs that ran."""
    keys = data["tune_params_keys"]
    cache = data["cache"]
    tune_params = {k: data["tune_params"][k] for k in keys}

    def recorded(p):
        return ",".join(str(p[k]) for k in keys) in cache

    # A space recorded by bench/spaces/record.py may give its constraints as Kernel Tuner
    # restrictions: with many knobs, "is in the cache" alone makes Kernel Tuner enumerate their
    # whole product. They must give exactly the cached configs (checked in main).
    restrictions = data.get("attune_recorded", {}).get("kernel_tuner_restrictions") or recorded

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Some strategies raise on small spaces (diff_evo draws a population larger than the
        # space): such a run found nothing (counted as not reached) and the row says how many.
        try:
            results, _ = tune_kernel(
                data["kernel_name"], "__global__ void k() {}", data["problem_size"], [],
                tune_params, restrictions=restrictions, strategy=strategy, cache=cache_path,
                simulation_mode=True,
                # More than the space's passing configs and some strategies (greedy_ils, mls)
                # never stop: they do not count a failed config.
                strategy_options={"max_fevals": min(budget, passing)}, seed=seed,
                quiet=True, verbose=False, objective="time")
        except Exception:  # noqa: BLE001 - any failure of the peer's run is reported, not fatal
            return None
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
    ap.add_argument("--datasets", required=True, help="directories, comma-separated")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--only", default="")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    files = sorted(os.path.join(d, f) for d in a.datasets.split(",") for f in os.listdir(d)
                   if (f.endswith(".json") or f.endswith(".json.gz")) and a.only in f)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            data = load(f)
            base = os.path.basename(f)
            name = base[:-8] if base.endswith(".json.gz") else base[:-5]
            # Kernel Tuner reads plain JSON; give it its own copy (it may append to caches).
            cache_path = os.path.join(tmp, name + ".json")
            # "cache" last and the file ending in "}}}", as Kernel Tuner's reader expects of a
            # closed cache.
            configs = data.pop("cache")
            data["cache"] = configs
            with open(cache_path, "w") as out:
                json.dump(data, out)
            given = data.get("attune_recorded", {}).get("kernel_tuner_restrictions")
            if given:
                tp = {k: data["tune_params"][k] for k in data["tune_params_keys"]}
                built = {",".join(str(x) for x in c) for c in Searchspace(tp, given, 1024).list}
                if built != set(data["cache"]):
                    sys.exit(f"{f}: its kernel_tuner_restrictions give {len(built)} configs, "
                             f"the cache has {len(data['cache'])}")
            times = [v["time"] for v in data["cache"].values()
                     if "__error__" not in v and isinstance(v.get("time"), (int, float))]
            optimum = min(times)
            for strategy in a.strategies.split(","):
                to1, to2, frac = [], [], {c: [] for c in CHECKPOINTS}
                raised = 0
                for seed in range(a.first_seed, a.first_seed + a.seeds):
                    np.random.seed(seed)
                    random.seed(seed)
                    trace = run_one(cache_path, data, strategy, seed, a.budget, len(times))
                    if trace is None:
                        raised, trace = raised + 1, []
                    to1.append(first_within(trace, optimum, 0.01))
                    to2.append(first_within(trace, optimum, 0.02))
                    for c in CHECKPOINTS:
                        b = trace[min(c, len(trace)) - 1] if trace else math.inf
                        frac[c].append(optimum / b if math.isfinite(b) else 0.0)
                reached = sum(math.isfinite(x) for x in to2)
                label = f"kernel_tuner {strategy}" + (f" ({raised} runs raised)" if raised else "")
                row = (f"| {name} | {len(data['cache'])} | {label} | "
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
