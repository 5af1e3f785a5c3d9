#!/usr/bin/env python3
"""Kernel Tuner 1.5 tuning its own matmul example (the space of its examples/cuda/matmul.py).

Run by duel.py as its own process, so its wall time includes Python's start, the data and the
answer, as a user's run does. Writes Kernel Tuner's results (and its cache, --cache) as JSON.
--only NAME=VALUE,... restricts the space to one config (the end-to-end cost of one config).
"""
import argparse
import json
import time

T0 = time.time()

import numpy as np  # noqa: E402
from kernel_tuner import tune_kernel  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True, help="Kernel Tuner's matmul.cu")
    ap.add_argument("--out", required=True, help="results JSON")
    ap.add_argument("--cache", help="Kernel Tuner's cache file to write")
    ap.add_argument("--only", help="one config: block_size_x=32,block_size_y=4,...")
    args = ap.parse_args()

    width = 4096  # the kernel's '#define WIDTH 4096'
    rng = np.random.default_rng()
    A = rng.standard_normal((width, width), dtype=np.float32)
    B = rng.standard_normal((width, width), dtype=np.float32)
    C = np.zeros_like(A)
    answer = [A @ B, None, None]

    tune_params = {
        "block_size_x": [16, 32, 64],
        "block_size_y": [1, 2, 4, 8, 16, 32],
        "tile_size_x": [1, 2, 4, 8],
        "tile_size_y": [1, 2, 4, 8],
    }
    if args.only:
        for kv in args.only.split(","):
            k, v = kv.split("=")
            tune_params[k] = [int(v)]
    t_tune = time.time()
    results, env = tune_kernel(
        "matmul_kernel", args.kernel, (width, width), [C, A, B], tune_params,
        grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
        restrictions=["block_size_x==block_size_y*tile_size_y"], answer=answer, atol=1e-3,
        lang="cupy", strategy="brute_force", cache=args.cache, verbose=False, quiet=True)
    t_end = time.time()
    keep = ["block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "time", "times",
            "compile_time", "verification_time", "benchmark_time", "strategy_time",
            "framework_time", "timestamp"]
    rows = [{k: r[k] for k in keep if k in r} for r in results]
    with open(args.out, "w") as f:
        json.dump({"process_start": T0, "tune_start": t_tune, "end": t_end, "results": rows,
                   "device": env.get("device_name"), "kernel_tuner": env.get("kernel_tuner_version",
                                                                             None)}, f, default=str)


if __name__ == "__main__":
    main()
