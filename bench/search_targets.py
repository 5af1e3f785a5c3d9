#!/usr/bin/env python3
"""Issue 15's targets from bench/search_replay reports that hold Kernel Tuner's rows too.

Per space: attune's strategies' median evaluations to within 2% of the optimum and seeds that got
there, against the best of Kernel Tuner's strategies for that space, and whether each attune
strategy met both targets: a median no larger than that best, and within 2% inside the budget in
at least 95% of the seeds (19 of 20).

    bench/search_targets.py REPORT.md [MORE.md ...] [--strategies mcts_repair,portfolio]
    bench/search_targets.py PICK.md [...] --judge JUDGE.md [...]

With REPORT.md alone, Kernel Tuner's best is picked after the fact on the same seeds as it is
judged on: the smallest of its strategies' medians, each an estimate over a few seeds, so the
minimum is biased low. With --judge, Kernel Tuner's strategy for each space is picked on the
reports before --judge (their seeds) and both it and attune are judged on the --judge reports
(other seeds), where the pick's median is an unbiased estimate. Several files per side are read
as one report (search_replay's own rows in one file, Kernel Tuner's side-by-side in another);
rows of the prior-from-others runs count as the strategy "NAME + prior from others", and where a
space has none (no other space of its kernel to fit a prior on) that strategy is NAME's cold run.
"""
import argparse
import math
import re

PRIOR = " + prior from others"


def rows(paths):
    """(space, strategy, median evals to 2%, seeds that got there, seeds) of every main table row."""
    for path in paths:
        for line in open(path):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if (len(cells) < 6 or not re.match(r"^\d+$", cells[1])
                    or not re.match(r"^\d+/\d+$", cells[5]) or "<-" in cells[0]):
                continue  # headers, other tables, the warm-start table
            med = cells[4]
            value = math.inf if med.startswith("not reached") else float(med)
            got, of = (int(x) for x in cells[5].split("/"))
            yield cells[0], re.sub(r" \(\d+ runs raised\)$", "", cells[2]), value, got, of


def split(paths):
    attune, kt = {}, {}
    for space, strategy, med, got, of in rows(paths):
        if strategy.startswith("kernel_tuner "):
            kt.setdefault(space, {})[strategy[len("kernel_tuner "):]] = (med, got, of)
        else:
            attune.setdefault(space, {})[strategy] = (med, got, of)
    return attune, kt


def fmt(m):
    return "not reached" if math.isinf(m) else f"{m:.0f}"


def cell(result):
    med, got, of = result
    return f"{fmt(med)} ({got}/{of})"


def met(result, target):
    med, got, of = result
    return med <= target and got >= math.ceil(0.95 * of)


def resolve(results, strategy):
    """A strategy's result for one space and a note; a strategy with the prior falls back to its
    cold run where the space has no prior-from-others row (no other space of its kernel)."""
    if strategy in results:
        return results[strategy], ""
    if strategy.endswith(PRIOR) and strategy[:-len(PRIOR)] in results:
        return results[strategy[:-len(PRIOR)]], " (cold: no prior)"
    return None, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--judge", nargs="+", default=[])
    ap.add_argument("--strategies", default="mcts_repair,portfolio")
    a = ap.parse_args()
    mine = a.strategies.split(",")
    attune, kt = split(a.reports)
    pick_kt = kt
    if a.judge:
        attune, kt = split(a.judge)
    head = " | ".join(f"{s} (seeds) | {s} met" for s in mine)
    if a.judge:
        print(f"| space | Kernel Tuner's pick (its median on the picking seeds) | the pick here "
              f"(seeds) | Kernel Tuner's best here, after the fact | random_sample here | {head} |")
        print("| --- | --- | ---: | --- | ---: | " + " | ".join("---: | ---" for _ in mine) + " |")
    else:
        print(f"| space | Kernel Tuner's best (seeds) | {head} |")
        print("| --- | --- | " + " | ".join("---: | ---" for _ in mine) + " |")
    count = {s: 0 for s in mine}
    counted = 0
    for space in sorted(attune):
        ours = [s for s in mine if resolve(attune[space], s)[0]]
        if not ours:
            continue
        if space not in kt or (a.judge and space not in pick_kt):
            cells = " | ".join(f"{cell(resolve(attune[space], s)[0])} | no Kernel Tuner rows"
                               for s in ours)
            print(f"| {space} | not run | {cells} |")
            continue
        counted += 1
        best_name = min(kt[space], key=lambda n: (kt[space][n][0], n))
        if a.judge:
            name = min(pick_kt[space], key=lambda n: (pick_kt[space][n][0], n))
            target = kt[space][name][0] if name in kt[space] else math.inf
            lead = (f"{name} ({fmt(pick_kt[space][name][0])}) | "
                    f"{cell(kt[space][name]) if name in kt[space] else 'not run'} | "
                    f"{fmt(kt[space][best_name][0])}, {best_name} | "
                    f"{cell(kt[space]['random_sample']) if 'random_sample' in kt[space] else '-'}")
        else:
            target = kt[space][best_name][0]
            lead = f"{fmt(target)}, {best_name} ({kt[space][best_name][1]}/{kt[space][best_name][2]})"
        cells = []
        for s in mine:
            result, note = resolve(attune[space], s)
            result = result or (math.inf, 0, 1)
            ok = met(result, target)
            count[s] += ok
            cells.append(f"{cell(result)}{note} | {'yes' if ok else 'no'}")
        print(f"| {space} | {lead} | " + " | ".join(cells) + " |")
    print()
    against = ("Kernel Tuner's strategy picked on the other seeds" if a.judge else
               "Kernel Tuner's best, picked after the fact")
    for s in mine:
        print(f"- {s}: both targets met on {count[s]} of {counted} spaces with Kernel Tuner rows "
              f"(against {against})")


if __name__ == "__main__":
    main()
