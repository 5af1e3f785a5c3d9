#!/usr/bin/env python3
"""bench/verify_gap: how far a tuned row's recorded deploy time is from what libattune-rt's production path
measures (attune verify), and from the same config re-timed by fresh tuner processes.

Tunes PROBLEM (grid, whole space) into RUNS fresh databases, one tuner process each; exports run 1's
table and verifies it RUNS times. Prints, per run, the winner and its deploy time, the deploy time each
run measured for run 1's winner, and each verify's measured time: whether a gap is the row's own
measurement (run 1's winner re-timed elsewhere) or the production path.
Usage: bench/verify_gap.py ATTUNE_BINARY OUT_DIR PROBLEM [--runs N]
"""
import argparse, glob, json, os, sqlite3, statistics, subprocess

ap = argparse.ArgumentParser()
ap.add_argument("attune"); ap.add_argument("out"); ap.add_argument("problem")
ap.add_argument("--runs", type=int, default=3)
args = ap.parse_args()

def attune(*a):
    p = subprocess.run([args.attune, *a], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr

winners, first = [], None
for i in range(1, args.runs + 1):
    db = f"{args.out}/gap-{i}.db"
    if os.path.exists(db): os.remove(db)
    rc, out, err = attune("tune", "--backend", "cuda", "--problem", args.problem, "--strategy", "grid", "--patience", "0",
                          "--json", "--db", db)
    if rc not in (0, 1): raise SystemExit(f"tune {i}: exit {rc}: {err.strip()[-300:]}")
    best = json.loads(out)["problems"][0]["best"]
    winners.append((best["config"], best["median_us"]))
    first = first or best["config"]
    con = sqlite3.connect(db)
    again = con.execute("SELECT median_us FROM measurements WHERE regime='deploy' AND verdict='ok' AND discarded IS NULL "
                        "AND config=?", (first,)).fetchone()
    con.close()
    print(f"tune {i}: winner {best['config']} {best['median_us']:.2f} us; run 1's winner here: "
          f"{again[0]:.2f} us" if again else f"tune {i}: winner {best['config']} {best['median_us']:.2f} us; "
          "run 1's winner not timed cold here")
rc, out, err = attune("export", "--format", "json", "-o", f"{args.out}/gap-tuned/", "--db", f"{args.out}/gap-1.db")
if rc != 0: raise SystemExit(f"export: exit {rc}: {err.strip()}")
table = glob.glob(f"{args.out}/gap-tuned/*.json")[0]
measured = []
for i in range(args.runs):
    rc, out, err = attune("verify", table, "--json")
    rows = json.loads(out)["rows"]
    measured.append(rows[0]["measured_us"])
    print(f"verify {i + 1}: recorded {rows[0]['recorded_us']:.2f} us, measured {rows[0]['measured_us']:.2f} us "
          f"({rows[0]['measured_us'] / rows[0]['recorded_us']:.3f}), exit {rc}")
print(f"verify median {statistics.median(measured):.2f} us against run 1's recorded {winners[0][1]:.2f} us")
