#!/usr/bin/env python3
"""attune report in a real browser (ctest label `browser`).

Tunes a few sim problems (a shape list, the faults problem through workers, a drifting rmsnorm),
writes `attune report` with the exported table and stand-in `attune verify --json` output, loads the
page in headless Chromium (Debian's `chromium`) and reads back the DOM, as a reader opens it (the
charts below the first screen drawn in idle slices, run to the end in virtual time) and with
?draw=all (every chart drawn before the first paint): the page's own script writes what it drew
into #attune-status (charts expected, charts painted, caught script errors).
The test fails on a script error, a chart that did not paint, or a missing section. Three broken
pages (no plotting library, a section removed, a chart spec Chart.js refuses) must each be caught,
so the check itself is shown to fail when it should. Standard library only.

    browser_test.py --attune build/src/attune [--keep DIR]
"""
import argparse
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

SECTIONS = ["overview", "problems", "shapes", "failures", "health", "table"]


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no chromium on PATH: install Debian's chromium (tools/install-deps)")


def browser_args(profile, width, height):
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start;
    # --disable-dev-shm-usage: a container's small /dev/shm would crash its renderer.
    return [chromium(), "--headless", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
            "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
            f"--window-size={width},{height}"]


def dump_dom(page, width=1280, height=2000, query="", budget_ms=None):
    """The DOM after the load event; with budget_ms, after that much virtual time (the page's
    timers run, so the charts drawn in idle slices are drawn too; its clock is then virtual)."""
    extra = [f"--virtual-time-budget={budget_ms}"] if budget_ms else []
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run(browser_args(profile, width, height) + extra +
                           ["--dump-dom", "file://" + page + query],
                           capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"chromium exited {r.returncode}: {r.stderr[-2000:]}")
    return r.stdout


def screenshot(page, png, width, height):
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(browser_args(profile, width, height) + [f"--screenshot={png}", "file://" + page],
                       capture_output=True, text=True, timeout=120, check=True)


class Dom(html.parser.HTMLParser):
    """The ids on the page, the canvases, and the status element's attributes."""

    def __init__(self):
        super().__init__()
        self.ids, self.canvases, self.status = set(), 0, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "canvas":
            self.canvases += 1
        if a.get("id") == "attune-status":
            self.status = a


def problems_with(dom_text, sections, complete=True):
    """What is wrong with the rendered page, as lines; [] when nothing is. complete: every chart
    must be drawn (a page loaded with ?draw=all); otherwise charts below the first screen may
    still wait (state "drawing"), but those drawn must be whole and no error may have happened."""
    dom = Dom()
    dom.feed(dom_text)
    s = dom.status
    if s is None:
        return ["no #attune-status element"]
    wrong = []
    state = s.get("data-state")
    if state != "ok" and (complete or state != "drawing"):
        wrong.append(f"state {state!r}: {s.get('data-errors', '')}")
    charts, rendered = int(s.get("data-charts", "0")), int(s.get("data-rendered", "0"))
    if charts == 0 or rendered == 0 or (complete and rendered != charts):
        wrong.append(f"{rendered} of {charts} charts painted")
    if dom.canvases != rendered and not s.get("data-errors"):
        wrong.append(f"{dom.canvases} canvases for {rendered} charts drawn")
    wrong += [f"section {x} is missing" for x in sections if x not in dom.ids]
    return wrong


def run(attune, args, cwd, env=None):
    r = subprocess.run([attune] + args, cwd=cwd, capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, timeout=300)
    if r.returncode not in (0, 1):  # 1: a problem with no passing candidate (faults) is a result
        raise RuntimeError(f"attune {' '.join(args)} exited {r.returncode}: {r.stderr[-2000:]}")
    return r


def build_page(attune, work):
    db = os.path.join(work, "t.db")
    with open(os.path.join(work, "shapes.txt"), "w") as f:
        f.write("gemm:m=1,n=256,k=512\ngemm:m=16,n=512,k=256\ngemm:m=64,n=1024,k=1024\n")
    run(attune, ["--db", db, "tune", "--backend", "sim", "--shapes", "shapes.txt",
                 "--max-candidates", "40"], work)
    run(attune, ["--db", db, "tune", "--backend", "sim", "--problem", "faults"], work)
    # A clock drop in the middle of the search: the anchor catches it, rows are discarded.
    run(attune, ["--db", db, "tune", "--backend", "sim", "--problem", "rmsnorm", "--anchor-every",
                 "4", "--max-candidates", "40"], work, {"ATTUNE_SIM_DRIFT": "10:18:1.6"})
    # The sim's rows export like a GPU's; `attune verify` needs a GPU and libattune-rt, so its
    # --json output is stood in for: each row measured within the band, the last one 20% slow.
    os.makedirs(os.path.join(work, "tuned"), exist_ok=True)
    run(attune, ["--db", db, "export", "--format", "json", "-o", "tuned/"], work)
    tuned = os.path.join(work, "tuned")
    table = os.path.join(tuned, sorted(f for f in os.listdir(tuned) if f.endswith(".json"))[0])
    with open(table) as f:
        rows = [r for op in json.load(f)["ops"] for r in op["rows"]]
    checks = [{"row": i + 1, "problem": r["problem"], "config": r["config"],
               "dispatched": r["config"], "recorded_us": r["median_us"],
               "measured_us": r["median_us"] * (1.2 if i + 1 == len(rows) else 1.02),
               "time_ok": i + 1 != len(rows), "dispatch_ok": True, "ok": i + 1 != len(rows)}
              for i, r in enumerate(rows)]
    verify = os.path.join(work, "verify.json")
    with open(verify, "w") as f:
        json.dump({"table": table, "band": 0.1, "hits": len(rows), "misses": 0, "failing": 1,
                   "rows": checks}, f)
    page = os.path.join(work, "report.html")
    r = subprocess.run([attune, "--db", db, "report", "--table", table, "--verify", verify,
                        "-o", page], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"attune report exited {r.returncode}: {r.stderr}")
    return page


def broken(page, work, name, old, new):
    with open(page, encoding="utf-8") as f:
        text = f.read()
    assert old in text, f"{name}: {old!r} is not on the page"
    path = os.path.join(work, name + ".html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attune", required=True)
    ap.add_argument("--keep", help="leave the database and pages in this directory")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="attune-browser-")
    os.makedirs(work, exist_ok=True)
    try:
        page = build_page(os.path.abspath(a.attune), work)
        failed = False
        for width in (1280, 390):
            # As a reader opens it: the first screen at once, the rest in idle slices (run here
            # in virtual time); then every chart before the first paint.
            for query, budget in (("", 30000), ("?draw=all", None)):
                wrong = problems_with(dump_dom(page, width, query=query, budget_ms=budget), SECTIONS)
                print(f"report.html{query} at {width} px: {'ok' if not wrong else '; '.join(wrong)}")
                failed |= bool(wrong)
        # The check must catch a broken page of each kind.
        with open(page, encoding="utf-8") as f:
            text = f.read()
        lib_start = text.index("<script>\n") + len("<script>\n")
        lib_end = text.index("\n</script>", lib_start)
        cases = {
            "no-library": (text[lib_start:lib_end], "/* no Chart.js */"),
            "no-section": ('<section id="shapes"', '<section id="shapez"'),
            "bad-chart": ('"type":"bar"', '"type":"no-such-chart-type"'),
        }
        for name, (old, new) in cases.items():
            wrong = problems_with(dump_dom(broken(page, work, name, old, new), query="?draw=all"),
                                  SECTIONS)
            print(f"{name}: {'NOT CAUGHT' if not wrong else 'caught: ' + '; '.join(wrong)}")
            failed |= not wrong
        return 1 if failed else 0
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
