#!/usr/bin/env python3
"""Checks a `attune tune --json --time-limit T` report against issue 13's targets and prints a
table: every problem reported, the run ended within T plus one candidate, drift bounded.

usage: check.py REPORT.json WALL_S LIMIT_S [MAX_BACKOFF_S]"""
import json
import sys


def main():
    report, wall, limit = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    max_backoff = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
    j = json.load(open(report))
    probs = j["problems"]
    print(f"| problem | stopped_by | evaluated | measured | baseline us | best us | speedup | drift events | back-off s | anchor levels |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    bad = []
    for p in probs:
        base = p["baseline"]["median_us"] if p["baseline"] else None
        best = p["best"]["median_us"] if p["best"] else None
        lv = p.get("anchor_levels")
        levels = f"{lv['low_us']:.2f} / {lv['high_us']:.2f}" if lv else "-"
        f = lambda v: f"{v:.2f}" if isinstance(v, (int, float)) else "-"
        print(f"| {p['spec']} | {p['stopped_by']} | {p['evaluated']} | {p['measured']} | {f(base)} | "
              f"{f(best)} | {f(p['speedup'])} | {p['drift_events']} | {p['backoff_s']:.1f} | {levels} |")
        if p["backoff_s"] > max_backoff + 1e-6:
            bad.append(f"{p['spec']}: {p['backoff_s']:.1f} s of back-off > {max_backoff}")
        if not p["stopped_by"]:
            bad.append(f"{p['spec']}: no stopped_by")
    started = sum(1 for p in probs if p["started"])
    with_best = sum(1 for p in probs if p["best"])
    print()
    print(f"problems reported {len(probs)}, started {started}, with a best {with_best}; "
          f"wall {wall:.1f} s for a limit of {limit:.0f} s (overshoot {wall - limit:+.1f} s); "
          f"run elapsed_s {j['run']['elapsed_s']:.1f}")
    for b in bad:
        print("FAIL", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
