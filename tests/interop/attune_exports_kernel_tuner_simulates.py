"""attune's export of a fully measured space loads in Kernel Tuner 1.5.0's own cache reader and
runs in its simulation mode (brute force), which finds attune's best config:
  - sim problems attune grid-searched on the CPU (rmsnorm, and faults, whose failures are written
    as Kernel Tuner's failure strings), simulated with the space's configs as the restriction;
  - the re-export of a space Kernel Tuner recorded (vector_add.c, its C backend), imported and
    grid-searched by attune, simulated by the very script that recorded it.

usage: attune_exports_kernel_tuner_simulates.py ATTUNE_BINARY
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktenv  # noqa: E402

ktenv.reexec_in_venv()

import json  # noqa: E402
import shutil  # noqa: E402

import kernel_tuner  # noqa: E402
from common import RESTRICTIONS, TUNE_PARAMS, attune, best_of, expect, tune_c_kernel  # noqa: E402
from kernel_tuner import util  # noqa: E402

# The header fields in the order Kernel Tuner writes them, with attune's `attune_baseline` (the
# config a replay starts from; Kernel Tuner ignores it, which reading and simulating below
# prove) before `cache`: its repair of a cache left open assumes `cache` ends the file.
HEADER = ["device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params",
          "objective", "attune_baseline", "cache"]


def read_as_kernel_tuner(path, work):
    """Kernel Tuner's own cache reader, on a copy (read_cache may rewrite the file it reads)."""
    probe = os.path.join(work, "probe.json")
    shutil.copy(path, probe)
    with open(probe) as f:
        text = f.read()
    expect(text.rstrip().endswith("}\n}"), "the export does not end as Kernel Tuner closes a cache")
    cache = util.read_cache(probe, open_cache=False)
    expect(list(cache) == HEADER, f"header fields {list(cache)}, expected {HEADER}")
    # Reopened for appending (what Kernel Tuner does to continue tuning from a cache) and read
    # again: the file must survive Kernel Tuner's own edit of it.
    util.read_cache(probe, open_cache=True)
    again = util.read_cache(probe, open_cache=False)
    expect(again["cache"].keys() == cache["cache"].keys(), "reopening the cache lost configs")
    return cache


def rank_best(binary, problem, work):
    """attune's fastest config in the rank regime (the one every config has, which the export
    writes), from attune's own listing of what it measured."""
    _, out, _ = attune(binary, ["eval", "variants", "--kernel", problem, "--json"], work)
    ok = [v for v in json.loads(out) if v["verdict"] == "ok" and v.get("rank_us")]
    best = min(ok, key=lambda v: v["rank_us"])
    return best["config"], best["rank_us"]


def check_sim_problem(binary, problem, problem_size, work):
    attune(binary, ["tune", "--backend", "sim", "--problem", problem, "--strategy", "grid",
                    "--patience", "0"], work)
    out_file = os.path.join(work, problem + ".json")
    _, _, err = attune(binary, ["export", "--format", "kernel-tuner", "--problem", problem,
                                "-o", out_file], work)
    expect("configs of the space measured" not in err, f"a full grid reads as partial: {err}")
    cache = read_as_kernel_tuner(out_file, work)
    keys = cache["tune_params_keys"]
    space = set(cache["cache"])  # every config of attune's space: the search space to simulate

    def in_space(p):  # a function, not a lambda: Kernel Tuner parses a lambda's source text
        return ",".join(str(p[k]) for k in keys) in space

    results, _ = kernel_tuner.tune_kernel(
        cache["kernel_name"], "float f(void) { return 0.0f; }", problem_size, [],
        cache["tune_params"], lang="C", cache=out_file, simulation_mode=True,
        strategy="brute_force", quiet=True, restrictions=in_space)
    expect(len(results) == len(space), f"simulated {len(results)} of {len(space)} configs")
    kt_config, kt_ms = best_of(results, keys)
    config, rank_us = rank_best(binary, problem, work)
    expect(kt_config == config, f"{problem}: Kernel Tuner's best {kt_config}, attune's {config}")
    expect(abs(kt_ms * 1000 - rank_us) <= 1e-9 * rank_us, f"{problem}: {kt_ms} ms vs {rank_us} us")
    # Kernel Tuner's tune_cache infers the arguments from the cache alone (a numeric
    # problem_size is required there).
    again, _ = kernel_tuner.tune_cache(out_file, strategy="brute_force", quiet=True)
    expect(best_of(again, keys)[0] == config, f"{problem}: tune_cache's best differs")
    print(f"ok: {problem}: {len(space)} configs, Kernel Tuner simulates attune's best {config}")


def check_replay_round_trip(binary, work):
    recorded = os.path.join(work, "vector_add.json")
    results = tune_c_kernel(recorded)
    kt_config, kt_ms = best_of(results, list(TUNE_PARAMS))
    attune(binary, ["import", "kernel-tuner", recorded, "--name", "vector_add"], work)
    _, out, _ = attune(binary, ["tune", "--backend", "replay", "--problem", "vector_add",
                                "--strategy", "grid", "--patience", "0", "--json"], work)
    best = json.loads(out)["problems"][0]["best"]
    exported = os.path.join(work, "vector_add-attune.json")
    _, _, err = attune(binary, ["export", "--format", "kernel-tuner", "--problem", "vector_add",
                                "-o", exported], work)
    expect("configs of the space measured" not in err, f"a full grid reads as partial: {err}")
    read_as_kernel_tuner(exported, work)
    # The script that recorded the space, in simulation mode on attune's export.
    simulated = tune_c_kernel(exported, simulation=True)
    config, ms = best_of(simulated, list(TUNE_PARAMS))
    expect(config == best["config"] == kt_config,
           f"simulated best {config}, attune's {best['config']}, recorded {kt_config}")
    expect(abs(ms - kt_ms) <= 1e-12 * kt_ms, f"simulated {ms} ms, recorded {kt_ms} ms")
    errors = sorted(str(r["__error__"]) for r in simulated if "__error__" in r)
    recorded_errors = sorted(str(r["__error__"]) for r in results if "__error__" in r)
    expect(errors == recorded_errors, f"failures {errors}, recorded {recorded_errors}")
    print(f"ok: vector_add: Kernel Tuner -> attune -> Kernel Tuner keeps the best {config}")


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="attune-kt-export-")
    os.chdir(work)  # Kernel Tuner's C backend compiles its temporary files in the working directory
    try:
        check_sim_problem(binary, "rmsnorm", (4096, 4096), work)  # rows x hidden
        check_sim_problem(binary, "faults", (3, 65536), work)  # its integer attributes by name
        check_replay_round_trip(binary, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
