#!/usr/bin/env python3
"""The fault campaign of issue 13: attune under kill -9, concurrency and a full disk.

Drives any build of the attune binary (--attune PATH) on the simulated device, in a temporary
directory, one database per phase, and prints one table of counts per phase. Every count except
runs and kills must be 0; the exit status is 0 then, 1 otherwise (the failing counts are named),
2 when the campaign itself cannot run. Python 3 standard library only. bench/faults/README.md
says what each phase does and what each count means.
"""

import argparse
import calendar
import errno
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

# Counts, in table order. runs and kills_* say how much was done; every other one must be 0.
COUNTS = [
    "runs",
    "kills_tune",
    "kills_worker",
    "integrity_failures",
    "rows_lost",
    "duplicates",
    "orphans",
    "healthy_as_failed",
    "left_running",
    "failed_to_start",
    "runs_incomplete",
    "attune_crashes",
]
INFORMATIVE = {"runs", "kills_tune", "kills_worker"}
SHORT = {
    "runs": "runs",
    "kills_tune": "kill tune",
    "kills_worker": "kill wrk",
    "integrity_failures": "integrity",
    "rows_lost": "rows lost",
    "duplicates": "dups",
    "orphans": "orphans",
    "healthy_as_failed": "ok->fail",
    "left_running": "running",
    "failed_to_start": "no start",
    "runs_incomplete": "incompl",
    "attune_crashes": "crashes",
}

SIZES = {
    # small: the ctest (label faults), under 60 s on 2 cores.
    "small": dict(tune_kills=3, worker_kills=3, newdb_rounds=1, same_rounds=1, disk_rounds=1),
    # full: what bench/results/ records. Issue 13 asks for at least 50 kills of each kind.
    "full": dict(tune_kills=50, worker_kills=50, newdb_rounds=14, same_rounds=6, disk_rounds=5),
}

TOKEN_VAR = "ATTUNE_FAULT_CAMPAIGN"
GRACE_S = 1.0  # how long a worker may outlive its killed tuner before it counts as an orphan
TIMEOUT_FLAG = ["--timeout", "2"]  # per candidate; the planted hang of `faults` needs it

# Workloads: (name, tune arguments after --backend sim, extra environment). {seed} is filled in.
WORKLOADS = {
    # every failure class planted, the hang included (about 2.5 s, most of it the hang's timeout)
    "faults-mcts": (["--problem", "faults", "--strategy", "mcts", "--seed", "{seed}"], {}),
    # 216 configs, steered by mcts
    "rmsnorm-mcts": (["--problem", "rmsnorm", "--strategy", "mcts", "--seed", "{seed}"], {}),
    # the same with the anchor drifting +50% for 10 executions: a discard and a back-off sleep
    "rmsnorm-drift": (
        ["--problem", "rmsnorm", "--strategy", "mcts", "--seed", "{seed}"],
        {"ATTUNE_SIM_DRIFT": "20:30:1.5"},
    ),
    # every config of rmsnorm, in order
    "rmsnorm-grid": (["--problem", "rmsnorm", "--strategy", "grid", "--patience", "0"], {}),
    # 1500 of gemm's 4776 configs (about 2.5 s)
    "gemm-grid": (
        ["--problem", "gemm", "--strategy", "grid", "--patience", "0", "--max-candidates", "1500"],
        {},
    ),
    # all of gemm's 4776 configs (about 5 s): long enough to fill a disk under
    "gemm-grid-all": (["--problem", "gemm", "--strategy", "grid", "--patience", "0"], {}),
    "gemm-random": (
        ["--problem", "gemm", "--strategy", "random", "--seed", "{seed}", "--max-candidates", "600"],
        {},
    ),
}

SCHEMA_ERROR = re.compile(r"schema|migrat", re.IGNORECASE)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# The database, read with Python's sqlite3 (read-only; never while attune might migrate it).


def connect_ro(db):
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)


def query(db, sql, args=()):
    """Rows of sql on db, or None when the database or the table is not there (yet)."""
    if not os.path.exists(db):
        return None
    try:
        con = connect_ro(db)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return None


def columns(db, table):
    rows = query(db, f"PRAGMA table_info({table})")
    return {r[1] for r in rows} if rows else set()


def measurement_count(db):
    rows = query(db, "SELECT COUNT(*) FROM measurements")
    return rows[0][0] if rows else 0


def snapshot(db):
    """Committed measurements: id -> (verdict, median_us)."""
    rows = query(db, "SELECT id, verdict, median_us FROM measurements")
    return {r[0]: (r[1], r[2]) for r in rows} if rows else {}


def rows_lost(before, db):
    after = snapshot(db)
    return sum(1 for i, v in before.items() if after.get(i) != v)


def integrity_ok(db):
    try:
        con = connect_ro(db)
        try:
            rows = con.execute("PRAGMA integrity_check").fetchall()
        finally:
            con.close()
        return rows == [("ok",)]
    except sqlite3.Error as e:
        log(f"  integrity_check of {db}: {e}")
        return False


def not_discarded(db):
    return "discarded IS NULL" if "discarded" in columns(db, "measurements") else "1"


def duplicates(db):
    """Extra non-discarded measurements of one (device, problem, backend, regime, config)."""
    rows = query(
        db,
        "SELECT COALESCE(SUM(c - 1), 0) FROM (SELECT COUNT(*) AS c FROM measurements WHERE "
        + not_discarded(db)
        + " GROUP BY device_key, problem_key, backend, regime, config_hash HAVING c > 1)",
    )
    return rows[0][0] if rows else 0


def runs_left_running(db):
    rows = query(db, "SELECT COUNT(*) FROM runs WHERE status = 'running'")
    return rows[0][0] if rows else 0


def failed_configs(db):
    """(problem text, config) pairs stored as crashed or timeout."""
    rows = query(
        db,
        "SELECT DISTINCT p.text, m.config FROM measurements m JOIN problems p ON p.key = m.problem_key"
        " WHERE m.verdict IN ('crashed', 'timeout') AND m." + not_discarded(db),
    )
    return rows or []


def run_intervals(db):
    rows = query(db, "SELECT arguments, started_at, finished_at FROM runs WHERE command = 'tune'")
    return rows or []


# ----------------------------------------------------------------------------------------------
# Processes.


def proc_argv(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def alive(pid):
    s = proc_state(pid)
    return s is not None and s not in ("Z", "X")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def worker_of(tune_pid):
    for c in children(tune_pid):
        argv = proc_argv(c)
        if len(argv) > 1 and argv[1] == "candidate-worker" and alive(c):
            return c
    return None


def worker_busy(pid):
    """True while the worker is inside a candidate: running, or blocked anywhere but reading its
    next request from stdin (x86-64 read(0, ...): syscall 0 with first argument 0)."""
    if proc_state(pid) == "R":
        return True
    try:
        with open(f"/proc/{pid}/syscall") as f:
            fields = f.read().split()
    except OSError:
        return False
    if not fields or fields[0] == "running":
        return True
    return not (fields[0] == "0" and len(fields) > 1 and int(fields[1], 16) == 0)


def token_processes(token):
    """Live processes whose environment carries TOKEN_VAR=token: (pid, argv)."""
    needle = f"{TOKEN_VAR}={token}".encode()
    prefix = token.endswith(":")  # a campaign's or a phase's prefix: every label under it
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        hit = any(e.startswith(needle) for e in env) if prefix else needle in env
        if hit and alive(int(name)):
            found.append((int(name), proc_argv(int(name))))
    return found


def kill_leftovers(token):
    """Kills what is left of the processes carrying token; returns how many workers were alive."""
    left = token_processes(token)
    workers = 0
    for pid, argv in left:
        kind = "worker" if len(argv) > 1 and argv[1] == "candidate-worker" else "other"
        workers += kind == "worker"
        log(f"  left alive: pid {pid} ({kind}) {' '.join(argv[:4])}: killing it")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return workers


class Campaign:
    def __init__(self, args):
        self.attune = os.path.abspath(args.attune)
        self.rng = random.Random(args.seed)
        self.seed = args.seed
        self.size = SIZES[args.size]
        self.dir = tempfile.mkdtemp(prefix="attune-faults-")
        self.keep = args.keep
        self.serial = 0
        self.phases = []  # dicts: name, counts, checks, notes
        self.durations = {}
        self.reference = {}  # (problem text, config) -> verdict in a clean run
        self.unverified = 0
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ATTUNE_")}
        self.token_base = f"{os.getpid()}-{int(time.time())}"

    # -- running attune ---------------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.dir, name)

    def next_name(self, stem):
        self.serial += 1
        return f"{stem}-{self.serial:04d}"

    def tune_argv(self, workload, db, seed):
        args, env = WORKLOADS[workload]
        argv = [self.attune, "tune", "--backend", "sim", "--db", db, "--json"] + TIMEOUT_FLAG
        argv += [a.format(seed=seed) for a in args]
        return argv, env

    def spawn(self, argv, extra_env, label):
        env = dict(self.env)
        env.update(extra_env)
        env[TOKEN_VAR] = f"{self.token_base}:{label}"
        out = open(self.path(label + ".out"), "wb")
        err = open(self.path(label + ".err"), "wb")
        p = subprocess.Popen(argv, cwd=self.dir, env=env, stdout=out, stderr=err)
        out.close()
        err.close()
        p.label = label
        p.token = env[TOKEN_VAR]
        p.started = time.monotonic()
        return p

    def stderr_of(self, label):
        try:
            with open(self.path(label + ".err"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def wait(self, p, limit_s):
        """Exit code, or None when it ran past limit_s (then it and what it started are killed)."""
        try:
            return p.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            log(f"  {p.label}: still running after {limit_s:.0f} s: killing it")
            p.kill()
            p.wait()
            kill_leftovers(p.token)
            return None

    def run(self, argv, extra_env, label, limit_s=120):
        p = self.spawn(argv, extra_env, label)
        return self.wait(p, limit_s), self.stderr_of(label)

    def spawn_together(self, argvs, extra_envs, labels):
        """Forks one child per command, each blocked on one pipe until all exist, then releases
        them at once by closing the pipe. Returns [(pid, label)]."""
        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pids = []
        for argv, extra, label in zip(argvs, extra_envs, labels):
            env = dict(self.env)
            env.update(extra)
            env[TOKEN_VAR] = f"{self.token_base}:{label}"
            out = os.open(self.path(label + ".out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            err = os.open(self.path(label + ".err"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(w)
                    os.dup2(out, 1)
                    os.dup2(err, 2)
                    os.chdir(self.dir)
                    os.read(r, 1)  # the barrier: returns at EOF, when the parent closes w
                    os.execve(argv[0], argv, env)
                finally:
                    os._exit(127)
            os.close(out)
            os.close(err)
            pids.append((pid, label))
        time.sleep(0.05)  # let every child reach the barrier (one that is late passes it anyway)
        os.close(w)
        os.close(r)
        return pids

    def wait_all(self, pids, limit_s):
        """{label: exit code (negative: signal; None: ran past limit_s and was killed)}."""
        deadline = time.monotonic() + limit_s
        codes, left = {}, dict(pids)
        while left:
            for pid, label in list(left.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    codes[label] = os.waitstatus_to_exitcode(status)
                    del left[pid]
            if left and time.monotonic() > deadline:
                for pid, label in left.items():
                    log(f"  {label}: still running after {limit_s:.0f} s: killing it")
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    codes[label] = None
                    kill_leftovers(f"{self.token_base}:{label}")
                left = {}
            time.sleep(0.02)
        return codes

    # -- what every phase checks ------------------------------------------------------------

    def judge_exit(self, counts, code, stderr, label):
        """Counts one finished attune process: failed to start, crashed, or incomplete."""
        if code == 2 or (code not in (0, 1) and SCHEMA_ERROR.search(stderr or "")):
            counts["failed_to_start"] += 1
            log(f"  {label}: failed to start (exit {code}): {last_line(stderr)}")
        elif code is not None and code < 0:
            counts["attune_crashes"] += 1
            log(f"  {label}: died by signal {-code}: {last_line(stderr)}")
        elif code not in (0, 1):
            counts["runs_incomplete"] += 1
            log(f"  {label}: did not complete (exit {code}): {last_line(stderr)}")

    def settle(self, counts, db, label):
        """Opens db with attune once more (eval failures: it needs no --kernel), then checks what
        it holds."""
        name = self.next_name(label + "-eval")
        code, err = self.run([self.attune, "eval", "failures", "--db", db], {}, name, 60)
        self.judge_exit(counts, code, err, name)
        if not integrity_ok(db):
            counts["integrity_failures"] += 1
            log(f"  {label}: integrity_check failed on {db}")
        counts["duplicates"] += duplicates(db)
        counts["left_running"] += runs_left_running(db)
        counts["healthy_as_failed"] += self.healthy_as_failed(db, label)

    def healthy_as_failed(self, db, label):
        n = 0
        for text, config in failed_configs(db):
            verdict = self.reference_verdict(text, config)
            if verdict is None:
                self.unverified += 1
                log(f"  {label}: no clean verdict for {text} {config}")
            elif verdict == "ok":
                n += 1
        return n

    def reference_verdict(self, text, config):
        """The verdict of config in a clean run: that config alone (pinned) on a fresh database."""
        key = (text, config)
        if key not in self.reference:
            db = self.path(self.next_name("reference") + ".db")
            pins = []
            for kv in config.split(","):
                pins += ["--pin", kv]
            argv = [self.attune, "tune", "--backend", "sim", "--db", db, "--problem", text]
            argv += TIMEOUT_FLAG + ["--strategy", "grid", "--patience", "0", "--json"] + pins
            self.run(argv, {}, os.path.basename(db)[:-3], 60)
            rows = query(
                db,
                "SELECT verdict FROM measurements WHERE config = ? AND regime = 'rank'"
                " ORDER BY id LIMIT 1",
                (config,),
            )
            self.reference[key] = rows[0][0] if rows else None
        return self.reference[key]

    def orphans_after_kill(self, p):
        """Workers still alive GRACE_S after their tuner was killed; all of it is killed."""
        time.sleep(GRACE_S)
        return kill_leftovers(p.token)

    # -- calibration --------------------------------------------------------------------------

    def duration(self, workload):
        """Wall time of one clean run of workload (measured once; kills land within it)."""
        if workload not in self.durations:
            label = self.next_name("calibrate-" + workload)
            argv, env = self.tune_argv(workload, self.path(label + ".db"), 1)
            t0 = time.monotonic()
            code, err = self.run(argv, env, label)
            self.durations[workload] = max(time.monotonic() - t0, 0.2)
            if code != 0:
                raise SystemExit(f"campaign: a clean run of {workload} failed (exit {code}): "
                                 f"{last_line(err)}")
            log(f"  clean run of {workload}: {self.durations[workload]:.2f} s")
        return self.durations[workload]

    # -- phases -------------------------------------------------------------------------------

    def new_phase(self, name, what):
        phase = {"name": name, "what": what, "counts": {c: 0 for c in COUNTS},
                 "checks": [], "notes": [], "started": time.monotonic()}
        self.phases.append(phase)
        log(f"phase {name}: {what}")
        return phase

    def check(self, phase, ok, text):
        phase["checks"].append({"ok": bool(ok), "check": text})

    def wait_until_measuring(self, p, db, not_before, give_up):
        """Sleeps until not_before, then until db holds a measurement; False if p ended first."""
        while time.monotonic() < not_before:
            if p.poll() is not None:
                return False
            time.sleep(0.01)
        while measurement_count(db) == 0:
            if p.poll() is not None or time.monotonic() > give_up:
                return False
            time.sleep(0.01)
        return p.poll() is None

    def phase_kill_tune(self):
        phase = self.new_phase("kill-tune", "kill -9 of attune tune at a random point, then the "
                               "same command rerun to completion")
        c = phase["counts"]
        target = self.size["tune_kills"]
        workloads = ["faults-mcts", "rmsnorm-drift", "gemm-grid", "rmsnorm-mcts"]
        misses = 0
        while c["kills_tune"] < target and misses < 3 * target:
            workload = workloads[(c["kills_tune"] + misses) % len(workloads)]
            label = self.next_name("kill-tune-" + workload)
            db = self.path(label + ".db")
            seed = self.rng.randrange(1000)
            argv, env = self.tune_argv(workload, db, seed)
            d = self.duration(workload)
            p = self.spawn(argv, env, label)
            c["runs"] += 1
            at = p.started + self.rng.uniform(0.05, 0.95) * d
            if not self.wait_until_measuring(p, db, at, p.started + 3 * d + 10):
                misses += 1
                log(f"  {label}: ended before the kill (exit {self.wait(p, 60)}); again")
                kill_leftovers(p.token)
                continue
            before = snapshot(db)
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            if p.returncode != -signal.SIGKILL:
                misses += 1
                log(f"  {label}: exited {p.returncode} before the kill landed; again")
                continue
            c["kills_tune"] += 1
            c["orphans"] += self.orphans_after_kill(p)
            rerun = label + "-rerun"
            code, err = self.run(argv, env, rerun, 10 * d + 60)
            c["runs"] += 1
            self.judge_exit(c, code, err, rerun)
            c["rows_lost"] += rows_lost(before, db)
            self.settle(c, db, label)
            c["orphans"] += kill_leftovers(f"{self.token_base}:{rerun}")
        self.check(phase, c["kills_tune"] >= target,
                   f"{c['kills_tune']} of {target} kills landed while the tune was measuring "
                   f"({misses} missed)")
        return phase

    def phase_kill_worker(self):
        phase = self.new_phase("kill-worker", "kill -9 of the tune's worker (a /proc child of the "
                               "tune pid) mid-candidate; the tune runs on to its end")
        c = phase["counts"]
        target = self.size["worker_kills"]
        workloads = ["faults-mcts", "gemm-grid", "rmsnorm-mcts"]
        misses = mid = 0
        while c["kills_worker"] < target and misses < 3 * target:
            workload = workloads[(c["kills_worker"] + misses) % len(workloads)]
            label = self.next_name("kill-worker-" + workload)
            db = self.path(label + ".db")
            argv, env = self.tune_argv(workload, db, self.rng.randrange(1000))
            d = self.duration(workload)
            p = self.spawn(argv, env, label)
            c["runs"] += 1
            at = p.started + self.rng.uniform(0.05, 0.9) * d
            killed = busy = False
            before = {}
            if self.wait_until_measuring(p, db, at, p.started + 3 * d + 10):
                before = snapshot(db)
                # Mid-candidate: the worker running, or blocked anywhere but on its next request.
                # It is killed the moment it is seen so (within 0.5 s; otherwise where it is).
                give_up = time.monotonic() + 0.5
                worker = None
                while p.poll() is None:
                    worker = worker_of(p.pid) or worker
                    busy = bool(worker) and worker_busy(worker)
                    if busy or time.monotonic() > give_up:
                        break
                    time.sleep(0.0005)
                if worker and p.poll() is None:
                    try:
                        os.kill(worker, signal.SIGKILL)
                        killed = True
                        mid += busy
                    except ProcessLookupError:
                        pass
            code = self.wait(p, 10 * d + 60)
            if not killed:
                misses += 1
                log(f"  {label}: no live worker to kill (exit {code}); again")
                continue
            c["kills_worker"] += 1
            self.judge_exit(c, code, self.stderr_of(label), label)
            c["rows_lost"] += rows_lost(before, db)
            self.settle(c, db, label)
            c["orphans"] += kill_leftovers(p.token)
        self.check(phase, c["kills_worker"] >= target,
                   f"{c['kills_worker']} of {target} worker kills landed while the tune was "
                   f"measuring ({misses} missed)")
        self.check(phase, mid * 2 >= c["kills_worker"] and mid > 0,
                   f"{mid} of {c['kills_worker']} worker kills landed mid-candidate "
                   "(at least half must)")
        return phase

    def phase_new_db(self):
        phase = self.new_phase("new-db-8", "8 attune tune processes released together by a barrier "
                               "on one new database (distinct problems)")
        c = phase["counts"]
        rounds = self.size["newdb_rounds"]
        spread = []
        for r in range(rounds):
            db = self.path(self.next_name("new-db") + ".db")
            argvs, envs, labels = [], [], []
            for i in range(8):
                label = self.next_name(f"new-db-r{r}-p{i}")
                if i == 0:
                    argv, env = self.tune_argv("faults-mcts", db, r)
                else:
                    argv = [self.attune, "tune", "--backend", "sim", "--db", db, "--json"]
                    argv += TIMEOUT_FLAG + ["--problem", f"rmsnorm:rows={512 * i},hidden=4096",
                                            "--seed", str(r), "--max-candidates", "40"]
                    env = {}
                argvs.append(argv)
                envs.append(env)
                labels.append(label)
            codes = self.wait_all(self.spawn_together(argvs, envs, labels), 120)
            c["runs"] += len(labels)
            for label in labels:
                self.judge_exit(c, codes[label], self.stderr_of(label), label)
                c["orphans"] += kill_leftovers(f"{self.token_base}:{label}")
            starts = [parse_time(s) for _, s, _ in run_intervals(db)]
            starts = [s for s in starts if s is not None]
            if len(starts) > 1:
                spread.append(max(starts) - min(starts))
            self.settle(c, db, f"new-db-r{r}")
        self.check(phase, c["runs"] == 8 * rounds, f"{c['runs']} processes in {rounds} rounds of 8")
        if spread:
            phase["notes"].append(f"runs' started_at spread within a round: at most "
                                  f"{max(spread) * 1000:.0f} ms")
        return phase

    def phase_same_problem(self):
        phase = self.new_phase("same-problem-4", "the same tune command (same problem) in 4 "
                               "processes released together on one database")
        c = phase["counts"]
        rounds = self.size["same_rounds"]
        workloads = ["rmsnorm-grid", "faults-mcts", "gemm-random"]
        overlapped = 0
        for r in range(rounds):
            workload = workloads[r % len(workloads)]
            db = self.path(self.next_name("same-" + workload) + ".db")
            # The database is made first, by one short tune of another problem: this phase is
            # about four tuners of one problem, the migration race is new-db-8's.
            label = self.next_name(f"same-r{r}-create")
            create = [self.attune, "tune", "--backend", "sim", "--db", db, "--json"] + TIMEOUT_FLAG
            create += ["--problem", "rmsnorm:rows=8,hidden=256", "--max-candidates", "2"]
            code, err = self.run(create, {}, label, 60)
            c["runs"] += 1
            self.judge_exit(c, code, err, label)
            argv, env = self.tune_argv(workload, db, r)
            labels = [self.next_name(f"same-r{r}-p{i}") for i in range(4)]
            codes = self.wait_all(self.spawn_together([argv] * 4, [env] * 4, labels), 300)
            c["runs"] += 4
            for label in labels:
                self.judge_exit(c, codes[label], self.stderr_of(label), label)
                c["orphans"] += kill_leftovers(f"{self.token_base}:{label}")
            spans = [(parse_time(s), parse_time(f)) for a, s, f in run_intervals(db)
                     if "rows=8,hidden=256" not in a]
            spans = [s for s in spans if s[0] is not None and s[1] is not None]
            # Overlap: all four were between their start and their end at one instant (attune's
            # own clock, from opening the database to finishing the run).
            if len(spans) == 4 and max(s for s, _ in spans) < min(f for _, f in spans):
                overlapped += 1
            else:
                log(f"  same-problem round {r}: the 4 runs did not overlap: {spans}")
            self.settle(c, db, f"same-r{r}")
        self.check(phase, overlapped == rounds,
                   f"{overlapped} of {rounds} rounds had all 4 runs open at one instant")
        return phase

    def phase_disk_full(self):
        phase = self.new_phase("disk-full", "the database on a small tmpfs filled up mid-run by a "
                               "filler file; then space freed and the command rerun")
        c = phase["counts"]
        rounds = self.size["disk_rounds"]
        why = None
        if os.geteuid() != 0:
            why = "not root, so no tmpfs can be mounted"
        elif not shutil.which("mount"):
            why = "no mount command"
        hits = attempts = 0
        workload = "gemm-grid-all"
        while hits < rounds and attempts < 3 * rounds and not why:
            mnt = self.path(f"tmpfs-{attempts}")
            os.mkdir(mnt)
            m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt],
                               capture_output=True, text=True)
            if m.returncode != 0:
                why = f"mount -t tmpfs failed: {last_line(m.stderr)}"
                break
            try:
                hits += self.disk_full_round(c, mnt, workload, attempts)
            finally:
                subprocess.run(["umount", "-l", mnt], capture_output=True)
            attempts += 1
        if why:
            phase["skipped"] = why
            log(f"  disk-full phase skipped: {why}")
            print(f"disk-full phase skipped: {why}")
        else:
            self.check(phase, hits == rounds,
                       f"{hits} of {rounds} rounds filled the disk while the tune was measuring "
                       f"({attempts - hits} missed)")
        return phase

    def disk_full_round(self, c, mnt, workload, r):
        label = self.next_name(f"disk-full-r{r}")
        db = os.path.join(mnt, "attune.db")
        argv, env = self.tune_argv(workload, db, r)
        d = self.duration(workload)
        p = self.spawn(argv, env, label)
        c["runs"] += 1
        at = p.started + self.rng.uniform(0.1, 0.6) * d
        hit = False
        filler = os.path.join(mnt, "filler")
        if self.wait_until_measuring(p, db, at, p.started + 3 * d + 10):
            fill(filler)
            hit = p.poll() is None
        code = self.wait(p, 10 * d + 60)
        err = self.stderr_of(label)
        if not hit:
            log(f"  {label}: the tune ended before the disk was full (exit {code}); again")
        if code is not None and code < 0:
            c["attune_crashes"] += 1
        log(f"  {label}: on a full disk the tune exited {code}: {last_line(err)}")
        if not integrity_ok(db):
            c["integrity_failures"] += 1
        before = snapshot(db)
        if os.path.exists(filler):
            os.unlink(filler)
        rerun = label + "-rerun"
        code, err = self.run(argv, env, rerun, 10 * d + 60)
        c["runs"] += 1
        self.judge_exit(c, code, err, rerun)
        c["rows_lost"] += rows_lost(before, db)
        self.settle(c, db, label)
        c["orphans"] += kill_leftovers(p.token) + kill_leftovers(f"{self.token_base}:{rerun}")
        return hit

    # -- report -------------------------------------------------------------------------------

    def report(self, wall_s, json_path):
        total = {k: sum(p["counts"][k] for p in self.phases) for k in COUNTS}
        width = max(len(p["name"]) for p in self.phases + [{"name": "total"}])
        head = f"{'phase':<{width}}  " + "  ".join(f"{SHORT[k]:>9}" for k in COUNTS) + "  wall s"
        print(head)
        print("-" * len(head))
        for p in self.phases + [{"name": "total", "counts": total, "wall_s": wall_s}]:
            cells = "  ".join(f"{p['counts'][k]:>9}" for k in COUNTS)
            skipped = "  (skipped)" if p.get("skipped") else ""
            print(f"{p['name']:<{width}}  {cells}  {p.get('wall_s', 0):>6.1f}{skipped}")
        failed_counts = [k for k in COUNTS if k not in INFORMATIVE and total[k] > 0]
        checks = [(p["name"], ch) for p in self.phases for ch in p["checks"]]
        failed_checks = [f"{n}: {ch['check']}" for n, ch in checks if not ch["ok"]]
        if self.unverified:
            failed_checks.append(f"{self.unverified} failed configs had no clean verdict to "
                                 "compare with")
        print()
        for n, ch in checks:
            print(f"check {'ok  ' if ch['ok'] else 'FAIL'} {n}: {ch['check']}")
        for p in self.phases:
            for note in p["notes"]:
                print(f"note {p['name']}: {note}")
            if p.get("skipped"):
                print(f"note {p['name']}: skipped: {p['skipped']}")
        print(f"\nseed {self.seed}, size {self.args_size}, wall {wall_s:.1f} s, attune {self.attune}")
        if failed_counts:
            print("FAILED counts: " + ", ".join(f"{k}={total[k]}" for k in failed_counts))
        if failed_checks:
            print("FAILED checks (the campaign did not exercise what it must):")
            for f in failed_checks:
                print(f"  {f}")
        if not failed_counts and not failed_checks:
            print("PASSED: every count except runs and kills is 0")
        if json_path:
            with open(json_path, "w") as f:
                json.dump({"seed": self.seed, "size": self.args_size, "wall_s": round(wall_s, 1),
                           "attune": self.attune, "total": total,
                           "phases": self.phases, "failed_counts": failed_counts,
                           "failed_checks": failed_checks}, f, indent=2)
        return 1 if failed_counts or failed_checks else 0


def fill(path):
    """Writes path until the file system is full."""
    chunk = b"\0" * (1 << 16)
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 16, 4096, 512, 1):
            block = chunk[:size]
            try:
                while True:
                    f.write(block)
            except OSError as e:
                if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise


def parse_time(text):
    """Seconds of an attune timestamp (2026-12-01T12:04:58.178Z), or None."""
    if not text:
        return None
    m = re.match(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)(?:\.(\d+))?", text)
    if not m:
        return None
    y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
    frac = float("0." + m.group(7)) if m.group(7) else 0.0
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + frac


def last_line(text):
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attune", required=True, help="the attune binary to drive")
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--seed", type=int, default=None, help="the campaign's randomness "
                    "(default: from the clock; printed either way)")
    ap.add_argument("--json", metavar="FILE", help="also write the counts as JSON")
    ap.add_argument("--phases", default="kill-tune,kill-worker,new-db-8,same-problem-4,disk-full",
                    help="comma-separated subset of the phases (default: all)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = int(time.time()) % 100000
    if not os.access(args.attune, os.X_OK):
        print(f"campaign: {args.attune} is not an executable attune binary", file=sys.stderr)
        return 2
    if not os.path.isdir("/proc/self/task"):
        print("campaign: needs Linux /proc to find workers and orphans", file=sys.stderr)
        return 2
    campaign = Campaign(args)
    campaign.args_size = args.size
    print(f"fault campaign: seed {args.seed}, size {args.size}, attune {campaign.attune}, "
          f"dir {campaign.dir}", flush=True)
    phases = {
        "kill-tune": campaign.phase_kill_tune,
        "kill-worker": campaign.phase_kill_worker,
        "new-db-8": campaign.phase_new_db,
        "same-problem-4": campaign.phase_same_problem,
        "disk-full": campaign.phase_disk_full,
    }
    t0 = time.monotonic()
    try:
        for name in args.phases.split(","):
            if name not in phases:
                print(f"campaign: unknown phase {name!r}; known: {', '.join(phases)}",
                      file=sys.stderr)
                return 2
            phase = phases[name]()
            phase["wall_s"] = round(time.monotonic() - phase.pop("started"), 1)
    finally:
        kill_leftovers(campaign.token_base + ":")
    status = campaign.report(time.monotonic() - t0, args.json)
    if campaign.keep:
        print(f"kept {campaign.dir}")
    else:
        shutil.rmtree(campaign.dir, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
