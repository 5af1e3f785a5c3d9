"""Caches that Kernel Tuner 1.5.0 itself writes (C backend, on the CPU) import into attune, and
attune's grid search over the imported space finds the optimum Kernel Tuner recorded: a finished
cache, and one left open by a run that crashed part-way (which Kernel Tuner itself resumes from).

usage: kernel_tuner_writes_attune_imports.py ATTUNE_BINARY
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktenv  # noqa: E402

ktenv.reexec_in_venv()

import json  # noqa: E402
import multiprocessing  # noqa: E402
import shutil  # noqa: E402

from common import TUNE_PARAMS, attune, best_of, expect, tune_c_kernel  # noqa: E402
from kernel_tuner import util  # noqa: E402

KEYS = list(TUNE_PARAMS)


def attune_tunes_to(binary, cache, name, work):
    """Imports the cache and grid-searches it; returns attune's JSON report of the problem."""
    _, out, err = attune(binary, ["import", "kernel-tuner", cache, "--name", name], work)
    expect(out == name + "\n", f"import printed {out!r}")
    _, out, _ = attune(binary, ["tune", "--backend", "replay", "--problem", name,
                                "--strategy", "grid", "--patience", "0", "--json"], work)
    return json.loads(out)["problems"][0], err


def crashing_run(cache):
    # Kernel Tuner in a process of its own that vector_add.c aborts part-way.
    from common import tune_c_kernel as tune
    tune(cache, compiler_options=["-DCRASH_AT_BLOCK=512"])


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="attune-kt-import-")
    os.chdir(work)  # Kernel Tuner's C backend compiles its temporary files in the working directory
    try:
        # A finished cache.
        full = os.path.join(work, "vector_add.json")
        results = tune_c_kernel(full)
        kt_config, kt_ms = best_of(results, KEYS)
        failures = {util.get_instance_string(r): str(r["__error__"]) for r in results
                    if "__error__" in r}
        expect(set(failures.values()) == {"CompilationFailedConfig"},
               f"the C kernel's planted failures: {failures}")
        problem, _ = attune_tunes_to(binary, full, "vector_add", work)
        expect(problem["evaluated"] == len(results),
               f"attune evaluated {problem['evaluated']} of the {len(results)} recorded configs")
        expect(problem["best"]["config"] == kt_config,
               f"attune's best {problem['best']['config']} is not Kernel Tuner's {kt_config}")
        expect(abs(problem["best"]["median_us"] - kt_ms * 1000) <= 1e-9 * kt_ms * 1000,
               f"attune's best time {problem['best']['median_us']} us, Kernel Tuner's {kt_ms} ms")
        verdicts = problem["verdicts"]
        expected = list(failures.values())
        expect(verdicts.get("build_failed") == expected.count("CompilationFailedConfig")
               and verdicts.get("unsupported") == expected.count("InvalidConfig"),
               f"attune's verdicts {verdicts} for Kernel Tuner's failures {failures}")

        # A cache left open: Kernel Tuner aborted mid-run (the kernel calls abort()).
        crashed = os.path.join(work, "crashed.json")
        p = multiprocessing.get_context("fork").Process(target=crashing_run, args=(crashed,))
        p.start()
        p.join()
        expect(p.exitcode != 0, "the crashing Kernel Tuner run did not crash")
        with open(crashed) as f:
            text = f.read()
        expect(text.rstrip().endswith(","), "Kernel Tuner's crashed cache is not left open")
        # What Kernel Tuner itself reads back from it (on a copy: read_cache may rewrite it).
        probe = os.path.join(work, "probe.json")
        shutil.copy(crashed, probe)
        kt_cache = util.read_cache(probe, open_cache=False)["cache"]
        ok = [e for e in kt_cache.values() if "__error__" not in e]
        expect(0 < len(kt_cache) < len(results), f"the crash left {len(kt_cache)} configs")
        problem, err = attune_tunes_to(binary, crashed, "crashed", work)
        expect("left open" in err, f"import did not say the cache was left open: {err!r}")
        expect(problem["evaluated"] == len(kt_cache),
               f"attune evaluated {problem['evaluated']}, Kernel Tuner reads {len(kt_cache)}")
        best = min(ok, key=lambda e: e["time"])
        expect(problem["best"]["config"] == ",".join(f"{k}={best[k]}" for k in KEYS),
               f"attune's best of the crashed cache {problem['best']['config']} is not {best}")
        print(f"ok: Kernel Tuner's best {kt_config} ({kt_ms:.4f} ms) found by attune; "
              f"a crashed cache of {len(kt_cache)} configs imported")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
