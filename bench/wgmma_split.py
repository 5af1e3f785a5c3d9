#!/usr/bin/env python3
"""bench/wgmma_split: gemm's (or gemm_rope's) wgmma kernel by one of its knobs, from attune tune databases.

Reads one or more databases written by `attune tune --problem P --pin kernel=wgmma --strategy grid`
(one per build of the plugin, named by the file's stem) and prints, per problem and build, the
best deploy-regime and rank-regime time at each value of the knob (wg_split by default, or the one
--by names, e.g. wg_tiles), the baseline's time (cuBLASLt's default for gemm, the split form for
gemm_rope), and how many wgmma configs passed and failed the gate.
Usage: bench/wgmma_split.py [--by KNOB] DB [DB ...]
"""
import os, sqlite3, sys
from collections import defaultdict

args = sys.argv[1:]
knob = "wg_split"
if args[:1] == ["--by"]:
    knob, args = args[1], args[2:]
tables = []
values = set()
for path in args:
    build = os.path.splitext(os.path.basename(path))[0]
    db = sqlite3.connect(path)
    for key, text in db.execute("select key, text from problems order by text"):
        rows = db.execute("select config, regime, median_us, verdict from measurements "
                          "where problem_key=?", (key,)).fetchall()
        ok = {c for c, _, _, v in rows if v == "ok" and "kernel=wgmma" in c}
        bad = {c for c, _, _, v in rows if v != "ok" and "kernel=wgmma" in c}
        for regime in ("deploy", "rank"):
            best, base = defaultdict(lambda: None), None
            for config, reg, us, verdict in rows:
                if reg != regime or verdict != "ok" or us is None:
                    continue
                if "kernel=wgmma" not in config:
                    base = us if base is None else min(base, us)
                    continue
                knobs = dict(kv.split("=") for kv in config.split(","))
                v = int(knobs.get(knob, 1))
                values.add(v)
                best[v] = us if best[v] is None else min(best[v], us)
            tables.append((build, text, regime, base, best, len(ok), len(bad)))
values = sorted(values)
print(f"| build | problem | regime | baseline us | " +
      " | ".join(f"best {knob} {v} us" for v in values) + " | wgmma configs ok / failed |")
print("|---|---|---|---:|" + "---:|" * len(values) + "---|")
for build, text, regime, base, best, ok, bad in tables:
    cells = [f"{best[v]:.2f}" if best[v] else "-" for v in values]
    print(f"| {build} | {text} | {regime} | " + (f"{base:.2f}" if base else "-") + " | " +
          " | ".join(cells) + f" | {ok} / {bad} |")
