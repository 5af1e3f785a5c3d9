#!/usr/bin/env python3
"""Issue 15's targets from a bench/search_replay report that holds Kernel Tuner's rows too.

Per space: attune's strategies' median evaluations to within 2% of the optimum and seeds that got
there, against the best of Kernel Tuner's strategies for that space (picked after the fact), and
whether each attune strategy met both targets: a median no larger than that best, and within 2%
inside the budget in at least 19 of 20 seeds.

    bench/search_targets.py REPORT.md [--strategies mcts,portfolio]
"""
import argparse
import math
import re


def rows(path):
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 6 or cells[0] in ("space", "---") or not re.match(r"^\d+$", cells[1]):
            continue
        med = cells[4]
        value = math.inf if med.startswith("not reached") else float(med)
        got, of = (int(x) for x in cells[5].split("/"))
        yield cells[0], cells[2], value, got, of


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--strategies", default="mcts,portfolio")
    a = ap.parse_args()
    mine = a.strategies.split(",")
    attune, kt = {}, {}
    for space, strategy, med, got, of in rows(a.report):
        if "<-" in space:
            continue  # the warm-start table
        if strategy.startswith("kernel_tuner "):
            kt.setdefault(space, []).append((med, strategy[len("kernel_tuner "):], got, of))
        else:
            attune.setdefault(space, {})[strategy] = (med, got, of)
    fmt = lambda m: "not reached" if math.isinf(m) else f"{m:.0f}"
    head = " | ".join(f"{s} (seeds) | {s} met" for s in mine)
    print(f"| space | Kernel Tuner's best (seeds) | {head} |")
    print("| --- | --- | " + " | ".join("---: | ---" for _ in mine) + " |")
    met = {s: 0 for s in mine}
    counted = 0
    for space in sorted(attune):
        if space not in kt:
            cells = " | ".join(
                f"{fmt(attune[space][s][0])} ({attune[space][s][1]}/{attune[space][s][2]}) | "
                "no Kernel Tuner rows" for s in mine if s in attune[space])
            print(f"| {space} | not run | {cells} |")
            continue
        counted += 1
        best = min(kt[space])
        cells = []
        for s in mine:
            med, got, of = attune[space].get(s, (math.inf, 0, 1))
            ok = med <= best[0] and got >= math.ceil(0.95 * of)
            met[s] += ok
            cells.append(f"{fmt(med)} ({got}/{of}) | {'yes' if ok else 'no'}")
        print(f"| {space} | {fmt(best[0])}, {best[1]} ({best[2]}/{best[3]}) | " + " | ".join(cells)
              + " |")
    print()
    for s in mine:
        print(f"- {s}: both targets met on {met[s]} of {counted} spaces with Kernel Tuner rows")


if __name__ == "__main__":
    main()
