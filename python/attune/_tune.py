"""attune.tune: a tuning run through the attune CLI, its report as `attune tune --json` prints it.

The tuner runs every candidate in a worker process that the CLI starts (`attune
candidate-worker`), so a tune runs the CLI rather than the tuner inside the Python process.
"""

import json
import os
import shutil
import subprocess
from typing import Iterable, Optional

from ._errors import error


def find_cli() -> str:
    """The attune CLI: $ATTUNE_BIN, else the one installed with this package (pip install),
    else the build tree's (PYTHONPATH=build/python), else `attune` on PATH."""
    if os.environ.get("ATTUNE_BIN"):
        return os.environ["ATTUNE_BIN"]
    here = os.path.dirname(os.path.abspath(__file__))
    bundled = os.path.join(here, "bin", "attune")
    if os.access(bundled, os.X_OK):
        return bundled
    try:
        from ._build_paths import ATTUNE_BIN
        if os.access(ATTUNE_BIN, os.X_OK):
            return ATTUNE_BIN
    except ImportError:
        pass
    found = shutil.which("attune")
    if found:
        return found
    raise error("not_found", "the attune CLI was not found: set ATTUNE_BIN, or put attune on PATH")


def tune(problem: Optional[str] = None, *, op: Optional[str] = None, shape: Optional[str] = None,
         dtype: Optional[str] = None, shapes: Optional[str] = None, kernel: Optional[str] = None,
         spec: Optional[str] = None, backend: Optional[str] = None, db: Optional[str] = None,
         strategy: Optional[str] = None, strategy_options: Optional[dict] = None,
         seed: Optional[int] = None, patience: Optional[int] = None,
         max_candidates: Optional[int] = None, time_limit: Optional[float] = None,
         fresh_search: bool = False, args: Iterable[str] = (), cli: Optional[str] = None,
         env: Optional[dict] = None) -> dict:
    """Runs `attune tune ... --json` and returns its report (docs/report.md) as a dict.

    Each keyword is the flag of the same name (problem -> --problem, max_candidates ->
    --max-candidates, strategy_options={"exploration": 0.5} -> --strategy-option
    exploration=0.5); `args` appends any other flags. Bad input (exit 2) raises attune.Error with
    code "invalid_argument" and the CLI's one line; a run whose work failed (exit 1: no candidate
    passed) or was interrupted (130) still returns its report, whose fields say so.
    """
    argv = [cli or find_cli(), "tune", "--json"]
    flags = {"--problem": problem, "--op": op, "--shape": shape, "--dtype": dtype,
             "--shapes": shapes, "--kernel": kernel, "--spec": spec, "--backend": backend,
             "--db": db, "--strategy": strategy, "--seed": seed, "--patience": patience,
             "--max-candidates": max_candidates, "--time-limit": time_limit}
    for flag, value in flags.items():
        if value is not None:
            argv += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    for name, value in (strategy_options or {}).items():
        argv += ["--strategy-option", f"{name}={value}"]
    if fresh_search:
        argv.append("--fresh-search")
    argv += list(args)
    run_env = None if env is None else {**os.environ, **env}
    done = subprocess.run(argv, capture_output=True, text=True, env=run_env)
    if done.returncode == 2:
        lines = [l for l in done.stderr.splitlines() if l.strip()]
        raise error("invalid_argument", lines[-1] if lines else "attune tune: bad input (exit 2)")
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = "\n".join(done.stderr.splitlines()[-5:])
        raise error("internal", f"attune tune exited {done.returncode} without a JSON report: "
                    f"{tail}") from None
    return report
