"""What the interop tests share: running the built attune, and Kernel Tuner on the CPU.

Imported only after ktenv.reexec_in_venv(), so kernel_tuner and numpy are there.
"""

import json
import os
import shlex
import subprocess
import sys
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))

# The C kernel's space (vector_add.c says which configs fail and how); the restriction prunes
# block_size_x * unroll > 2048, so 20 of the 24 combinations are tuned. (No value is over the C
# backend's 1024 threads: Kernel Tuner leaves such configs out of its cache, and then cannot
# simulate from that cache, whose simulated device has no thread limit.)
TUNE_PARAMS = OrderedDict(block_size_x=[128, 512, 1024], unroll=[1, 2, 3, 4], repeat=[1, 2])
RESTRICTIONS = ["block_size_x * unroll <= 2048"]
N = 100000


def attune(binary, args, cwd, check=True):
    """Runs attune; returns (exit code, stdout, stderr)."""
    p = subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"attune {shlex.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def tune_c_kernel(cache, compiler_options=(), strategy="brute_force", simulation=False):
    """Kernel Tuner's own tuning of vector_add.c with its C backend; returns its results."""
    import numpy as np
    import kernel_tuner

    with open(os.path.join(HERE, "vector_add.c")) as f:
        source = f.read()
    n = np.int32(N)
    a = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    b = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    c = np.zeros_like(a)
    results, _ = kernel_tuner.tune_kernel(
        "vector_add", source, N, [c, a, b, n], TUNE_PARAMS, lang="C",
        restrictions=RESTRICTIONS, cache=cache, iterations=3, answer=[a + b, None, None, None],
        compiler_options=list(compiler_options), strategy=strategy, simulation_mode=simulation,
        quiet=True)
    return results


def best_of(results, keys):
    """Kernel Tuner's best config (its own get_best_config) as attune's config text and time."""
    from kernel_tuner import util

    best = util.get_best_config(results, "time")
    return ",".join(f"{k}={best[k]}" for k in keys), best["time"]


def fail(message):
    sys.exit("FAIL: " + message)


def expect(condition, message):
    if not condition:
        fail(message)


def report(path):
    with open(path) as f:
        return json.load(f)
