"""attune.Database: a tuning database read through attune's store layer, as plain objects."""

import dataclasses
import os
from dataclasses import dataclass
from typing import Optional

from . import _native
from ._errors import error


@dataclass(frozen=True)
class Problem:
    name: str
    key: str  # the structural key
    op: str
    text: str  # canonical text, as `attune tune --problem` and tables write it
    attributes: dict


@dataclass(frozen=True)
class Measurement:
    """One candidate's result, whatever its verdict (times in microseconds; None without a
    measurement, i.e. for any verdict but ok)."""
    id: int
    run_id: int
    device_key: str
    problem: str  # the problem's name
    problem_key: str
    backend: str
    config: str
    config_hash: str
    regime: str  # rank (warm) or deploy (cold L2, graph replay: what tables use)
    verdict: str  # ok, unsupported, build_failed, launch_failed, crashed, timeout, oom, ...
    median_us: Optional[float]
    min_us: Optional[float]
    max_us: Optional[float]
    noise: Optional[float]
    samples: int
    cache: Optional[str]
    sm_clock_mhz: int
    throttle: str
    error_metric: Optional[str]
    error: Optional[float]
    tolerance: Optional[float]
    message: str
    created_at: str
    discarded: str  # why the row was discarded; "" for a kept row


@dataclass(frozen=True)
class Best:
    """The fastest passing config of one problem on one device."""
    device_key: str
    problem: str
    problem_key: str
    backend: str
    config: str
    regime: str  # the regime the configs were ranked in: deploy where measured, else rank
    median_us: float
    baseline_config: Optional[str]
    baseline_us: Optional[float]  # the baseline's time in the same regime, when measured
    speedup: Optional[float]  # baseline_us / median_us


class Database:
    """A tuning database, read only: Database("attune.db"), Database("sqlite:/abs/a.db") or
    Database("postgresql://user@host/db"). It is never created; one that is not an attune
    database, or is newer than this attune, is refused with attune.Error, left as it was."""

    def __init__(self, path_or_url):
        self.url = os.fspath(path_or_url)
        self._db = _native.Database(self.url)

    def close(self):
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def devices(self) -> list:
        """Device fingerprints (dicts, with their "key"), in the order first seen."""
        return self._db.devices()

    def problems(self) -> list:
        return [Problem(**p) for p in self._db.problems()]

    def runs(self) -> list:
        """Tuning runs (dicts), oldest first."""
        return self._db.runs()

    def measurements(self, problem: Optional[str] = None, device: Optional[str] = None,
                     backend: Optional[str] = None, regime: Optional[str] = None,
                     include_discarded: bool = False) -> list:
        """Rows, oldest first. problem: a name, an op or a structural key; device: a key."""
        return self._select(problem, device, backend, regime, False, include_discarded)

    def failures(self, problem: Optional[str] = None, device: Optional[str] = None) -> list:
        """Rows whose verdict is not ok."""
        return self._select(problem, device, None, None, True, False)

    def best(self, problem: Optional[str] = None, device: Optional[str] = None) -> list:
        """Per device and problem, the fastest config that passed everywhere it ran there: by
        deploy-regime median where any config has one (the regime tables are exported from),
        else by rank-regime median; with the baseline's time in the same regime."""
        rows = self._select(problem, device, None, None, False, False)
        groups = {}
        for r in rows:
            groups.setdefault((r.device_key, r.problem_key), []).append(r)
        out = []
        for (device_key, problem_key), group in groups.items():
            failed = {(r.backend, r.config) for r in group if r.verdict != "ok"}
            newest = {}  # (backend, config, regime) -> the newest passing row
            for r in group:
                if r.verdict == "ok" and (r.backend, r.config) not in failed:
                    newest[(r.backend, r.config, r.regime)] = r
            regime = "deploy" if any(k[2] == "deploy" for k in newest) else "rank"
            ranked = [r for k, r in newest.items() if k[2] == regime]
            if not ranked:
                continue
            top = min(ranked, key=lambda r: r.median_us)
            base = self._db.baseline(device_key, problem_key, top.backend)
            base_config = base["config"] if base else None
            base_row = newest.get((top.backend, base_config, regime)) if base else None
            base_us = base_row.median_us if base_row else None
            out.append(Best(device_key, top.problem, problem_key, top.backend, top.config, regime,
                            top.median_us, base_config, base_us,
                            base_us / top.median_us if base_us else None))
        return out

    def to_pandas(self, what: str = "measurements", **filters):
        """measurements(), failures() or best() (with their filters) as a pandas DataFrame."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Database.to_pandas needs pandas (apt install python3-pandas, or "
                              "pip install pandas)") from e
        if what not in ("measurements", "failures", "best"):
            raise ValueError(f"what: measurements, failures or best, not {what!r}")
        rows = getattr(self, what)(**filters)
        fields = [f.name for f in dataclasses.fields(Best if what == "best" else Measurement)]
        return pandas.DataFrame([dataclasses.astuple(r) for r in rows], columns=fields)

    def _select(self, problem, device, backend, regime, failures_only, include_discarded):
        raw = self._db.measurements(problem or "", device or "", backend or "", regime or "",
                                    failures_only, include_discarded)
        names = {p["key"]: p["name"] for p in self._db.problems()}
        if problem and not raw:
            known = {p["name"] for p in self._db.problems()} | set(names) | {
                p["op"] for p in self._db.problems()}
            if problem not in known:
                raise error("invalid_argument",
                            f"no problem, op or structural key '{problem}' in {self.url}; it "
                            f"holds: {', '.join(sorted(set(names.values()))) or 'nothing'}")
        return [Measurement(problem=names.get(r["problem_key"], r["problem_key"]), **r)
                for r in raw]
