#!/usr/bin/env python3
"""bench/wgmma_split: gemm's wgmma kernel by K split, from attune tune databases.

Reads one or more databases written by `attune tune --problem P --pin kernel=wgmma --strategy grid`
(one per build of the plugin, named by the file's stem) and prints, per problem and build, the
best deploy-regime and rank-regime time at each wg_split, cuBLASLt's default, and how many configs
failed the gate. Usage: bench/wgmma_split.py DB [DB ...]
"""
import os, sqlite3, sys
from collections import defaultdict

print("| build | problem | regime | cuBLASLt default us | " +
      " | ".join(f"best split {s} us" for s in (1, 2, 4, 8)) + " | configs ok / failed |")
print("|---|---|---|---:|" + "---:|" * 4 + "---|")
for path in sys.argv[1:]:
    build = os.path.splitext(os.path.basename(path))[0]
    db = sqlite3.connect(path)
    for key, text in db.execute("select key, text from problems order by text"):
        rows = db.execute("select config, regime, median_us, verdict from measurements "
                          "where problem_key=?", (key,)).fetchall()
        ok = {c for c, _, _, v in rows if v == "ok" and "kernel=wgmma" in c}
        bad = {c for c, _, _, v in rows if v != "ok" and "kernel=wgmma" in c}
        for regime in ("deploy", "rank"):
            best, lt = defaultdict(lambda: None), None
            for config, reg, us, verdict in rows:
                if reg != regime or verdict != "ok" or us is None:
                    continue
                if config.startswith("kernel=cublaslt"):
                    lt = us if lt is None else min(lt, us)
                    continue
                knobs = dict(kv.split("=") for kv in config.split(","))
                split = int(knobs.get("wg_split", 1))
                best[split] = us if best[split] is None else min(best[split], us)
            cells = [f"{best[s]:.2f}" if best[s] else "-" for s in (1, 2, 4, 8)]
            print(f"| {build} | {text} | {regime} | {lt:.2f} | " if lt else
                  f"| {build} | {text} | {regime} | - | ", end="")
            print(" | ".join(cells) + f" | {len(ok)} / {len(bad)} |")
