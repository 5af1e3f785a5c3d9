#!/usr/bin/env python3
"""Issue 18: one model layer tuned through the fan-out path with different device sets, compared.

For each variant (a set of device flags: "--gpus 2", "--devices 0", or none) it tunes the layer on a
fresh database and an empty compile cache, then re-runs it on the same database, and records the wall times, what each kernel
chose (config, deploy-regime median, the measurement's noise) and on which device its inner search
ran. It then compares every variant with the first: the same config per kernel, each time within the
kernels' measured noise, the layer totals, and the wall-time ratio; and lists each device's
fingerprint key (devices of one kind share one key).

Usage: bench/multi_gpu.py ATTUNE_BIN OUT_DIR [--variants "--gpus 2;--devices 0"]
           [--model models/qwen3-embedding-0.6b.json] [--shape "--batch 8 --tokens 512"]
           [--tune-flags "--max-candidates 40 --patience 0"] [--backend cuda]
Writes OUT_DIR/multi_gpu.md (and each run's JSON report and log) and prints the table.
"""
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, log_path, timeout=600, env=None):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or "", (e.stderr or "") + "\n(timed out)"
    wall = time.monotonic() - start
    with open(log_path, "w") as f:
        f.write(f"$ {shlex.join(cmd)}\nrc={rc} wall={wall:.1f}s\n--- stdout\n{out}\n--- stderr\n{err}")
    return rc, out, err, wall


def noise_of(db, problem_key, config):
    """The deploy-regime measurement's noise (relative spread) of `config`, from the database."""
    try:
        con = sqlite3.connect(db)
        row = con.execute(
            "SELECT noise FROM measurements WHERE problem_key = ? AND config = ? AND regime = 'deploy' "
            "AND verdict = 'ok' ORDER BY id DESC LIMIT 1", (problem_key, config)).fetchone()
        con.close()
        return row[0] if row and row[0] is not None else None
    except sqlite3.Error:
        return None


def tune(attune, out, name, flags, args):
    db = os.path.join(out, f"{name}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    cmd = [attune, "tune", "--backend", args["backend"], "--model", os.path.join(ROOT, args["model"]), "--layer", "0",
           *shlex.split(args["shape"]), *shlex.split(args["tune_flags"]), *shlex.split(flags),
           "--json", "--db", db]
    res = {"flags": flags or "(none)", "cmd": shlex.join(cmd)}
    # Each variant compiles into a compile cache of its own, empty at its first tune, so no variant's
    # wall time is shortened by kernels an earlier one compiled (its re-run reuses its own).
    cache = os.path.join(out, f"{name}-cubin")
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, ATTUNE_CACHE_DIR=cache)
    for key in ("tune", "rerun"):
        rc, out_text, err, wall = run(cmd, os.path.join(out, f"{name}-{key}.log"), env=env)
        r = {"rc": rc, "wall_s": wall}
        try:
            rep = json.loads(out_text)
        except json.JSONDecodeError:
            rep = None
            r["error"] = (err.strip().splitlines() or ["no JSON report"])[-1]
        if rep:
            with open(os.path.join(out, f"{name}-{key}.json"), "w") as f:
                json.dump(rep, f, indent=1)
            ks = rep.get("kernels") or []
            r.update({
                "devices": (rep.get("run") or {}).get("devices"),
                "device_key": (rep.get("device") or {}).get("key"),
                "winner": rep.get("winner"), "total_us": rep.get("total_us"),
                "assembled": (rep.get("assembled") or {}).get("assembled_us"),
                "measured": sum(int(k.get("measured") or 0) for k in ks),
                "replayed": sum(int(k.get("replayed") or 0) for k in ks),
                "kernels": {k["key"]: {"problem": k.get("problem"), "form": k.get("form"),
                                       "device": k.get("device"),
                                       "measured": k.get("measured"), "replayed": k.get("replayed"),
                                       "config": (k.get("best") or {}).get("config"),
                                       "us": (k.get("best") or {}).get("median_us"),
                                       "noise": noise_of(db, k.get("problem_key"),
                                                         (k.get("best") or {}).get("config"))}
                            for k in ks}})
        res[key] = r
    return res


def fmt(v, spec=".2f"):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    attune, out = argv[1], argv[2]
    opts = {"variants": "--gpus 2;--devices 0", "model": "models/qwen3-embedding-0.6b.json",
            "shape": "--batch 8 --tokens 512", "tune_flags": "--max-candidates 40 --patience 0", "backend": "cuda"}
    i = 3
    while i < len(argv):
        key = argv[i].lstrip("-").replace("-", "_")
        if key not in opts or i + 1 >= len(argv):
            print(f"multi_gpu.py: unknown flag or missing value: {argv[i]}", file=sys.stderr)
            return 2
        opts[key] = argv[i + 1]
        i += 2
    os.makedirs(out, exist_ok=True)
    _, listing, _, _ = run([attune, "device", "--list", "--backend", opts["backend"]], os.path.join(out, "devices.log"))
    variants = [v.strip() for v in opts["variants"].split(";")]
    results = [tune(attune, out, f"v{n}", flags, opts) for n, flags in enumerate(variants)]

    L = [f"# Issue 18: one layer tuned through the fan-out path ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
         "", f"`bench/multi_gpu.py {' '.join(shlex.quote(a) for a in argv[1:])}`", "",
         "Devices (`attune device --list`):", "", "```", listing.strip(), "```", "",
         "| variant | devices used | tune wall | measured | re-run wall | re-run measured | winner total | assembled | device key |",
         "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        t, rr = r["tune"], r["rerun"]
        L.append(f"| `{r['flags']}` | {t.get('devices', t.get('error'))} | {fmt(t['wall_s'], '.1f')} s | "
                 f"{t.get('measured', '-')} | {fmt(rr['wall_s'], '.1f')} s | {rr.get('measured', '-')} | "
                 f"{fmt(t.get('total_us'))} us | {fmt(t.get('assembled'))} us | {t.get('device_key', '-')} |")
    base = results[0]["tune"]
    for r in results[1:]:
        t = r["tune"]
        if "kernels" not in base or "kernels" not in t:
            L.append(f"\nNo comparison of `{r['flags']}`: a tune printed no report.")
            continue
        L += ["", f"## `{r['flags']}` against `{results[0]['flags']}`", "",
              f"- wall-time ratio: {t['wall_s'] / base['wall_s']:.2f}x "
              f"({fmt(t['wall_s'], '.1f')} s against {fmt(base['wall_s'], '.1f')} s)",
              f"- winner: {t.get('winner')} against {base.get('winner')}; totals {fmt(t.get('total_us'))} "
              f"against {fmt(base.get('total_us'))} us", "",
              "| kernel | same config | time | first's time | ratio | noise (both) | device (this / first) |",
              "|---|---|---:|---:|---:|---|---|"]
        same = within = 0
        for key, k in base["kernels"].items():
            o = t["kernels"].get(key)
            if not o:
                L.append(f"| `{k['problem']}` | missing | | | | | |")
                continue
            s = o["config"] == k["config"]
            same += s
            ratio = o["us"] / k["us"] if o.get("us") and k.get("us") else None
            band = max(o.get("noise") or 0, k.get("noise") or 0)
            ok = ratio is not None and abs(ratio - 1) <= band
            within += ok
            L.append(f"| `{k['problem']}` {k['form'] or ''} | {'yes' if s else 'no'} | {fmt(o.get('us'))} | "
                     f"{fmt(k.get('us'))} | {fmt(ratio, '.3f')} | {fmt(o.get('noise'), '.3f')} / "
                     f"{fmt(k.get('noise'), '.3f')}{'' if ok else ' (outside)'} | {o.get('device')} / {k.get('device')} |")
        L.append(f"\n{same} of {len(base['kernels'])} kernels chose the same config; "
                 f"{within} of {len(base['kernels'])} times within the larger of the two noises.")
    text = "\n".join(L) + "\n"
    with open(os.path.join(out, "multi_gpu.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
