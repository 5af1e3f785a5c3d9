#!/usr/bin/env python3
"""attune report at scale: a 100-problem database from sim runs, its page's size, and how long
headless Chromium takes to draw it (issue 20's targets: under 2 s, under 5 MB).

Tunes 100 sim GEMM shapes (--max-candidates 40; half of them tuned again by `random` with
another seed, so their charts carry two runs), writes `attune report`, loads it --repeats times in
headless Chromium and reads the page's own #attune-status: data-first-ms is performance.now()
when the first screen's charts have been drawn and checked, and with ?draw=all data-render-ms when
every chart has (both from navigation start: parsing the 200 KB library and the data included). Screenshots at 1280 and 390 px wide go to --screenshots DIR.
Results: bench/results/report-2026-12-02.md. Standard library only.

    bench/report_page.py --attune build/src/attune [--work DIR] [--screenshots DIR]
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "report"))
import browser_test  # noqa: E402  (the same Chromium invocation and DOM checks as the test)


def shapes(n):
    out = []
    for m in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
        for nk in ((256, 512), (512, 256), (1024, 1024), (2048, 512), (512, 2048), (4096, 1024),
                   (1024, 4096), (768, 768), (3072, 768), (768, 3072)):
            out.append(f"gemm:m={m},n={nk[0]},k={nk[1]}")
    return out[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attune", required=True)
    ap.add_argument("--work", help="keep the database and page here")
    ap.add_argument("--screenshots", help="write report-1280.png and report-390.png here")
    ap.add_argument("--problems", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    attune = os.path.abspath(a.attune)
    work = a.work or tempfile.mkdtemp(prefix="attune-report-bench-")
    os.makedirs(work, exist_ok=True)
    db = os.path.join(work, "bench.db")
    if os.path.exists(db):
        os.remove(db)
    specs = shapes(a.problems)
    with open(os.path.join(work, "shapes.txt"), "w") as f:
        f.write("\n".join(specs) + "\n")
    with open(os.path.join(work, "half.txt"), "w") as f:
        f.write("\n".join(specs[::2]) + "\n")
    t0 = time.monotonic()
    browser_test.run(attune, ["--db", db, "tune", "--backend", "sim", "--shapes", "shapes.txt",
                              "--max-candidates", "40"], work)
    browser_test.run(attune, ["--db", db, "tune", "--backend", "sim", "--shapes", "half.txt",
                              "--max-candidates", "40", "--strategy", "random", "--seed", "5",
                              "--fresh-search"], work)
    tune_s = time.monotonic() - t0
    page = os.path.join(work, "report.html")
    t0 = time.monotonic()
    r = subprocess.run([attune, "--db", db, "report", "-o", page], capture_output=True, text=True)
    write_s = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(r.stderr)
    size = os.path.getsize(page)
    # As a reader opens it: the first screen's charts drawn (data-first-ms), the rest later in
    # idle slices; and with ?draw=all: every chart drawn before the first paint (data-render-ms),
    # the whole page's drawing in one go.
    def cpu_s():
        u = resource.getrusage(resource.RUSAGE_CHILDREN)
        return u.ru_utime + u.ru_stime

    # CPU seconds of whole Chromium runs (every process it started): this page with ?draw=all
    # against an empty page, so the difference is what the page costs, whatever the machine's load.
    blank = os.path.join(work, "blank.html")
    with open(blank, "w") as f:
        f.write("<!DOCTYPE html><html><body><p>blank</p></body></html>\n")
    first, full, walls, page_cpu, blank_cpu = [], [], [], [], []
    for _ in range(a.repeats):
        c0 = cpu_s()
        browser_test.dump_dom(blank)
        blank_cpu.append(cpu_s() - c0)
        dom = browser_test.dump_dom(page)
        wrong = browser_test.problems_with(dom, browser_test.SECTIONS[:-1], complete=False)
        if wrong:
            sys.exit("the page did not render: " + "; ".join(wrong))
        first.append(int(re.search(r'data-first-ms="(\d+)"', dom).group(1)))
        t0, c0 = time.monotonic(), cpu_s()
        dom = browser_test.dump_dom(page, query="?draw=all")
        walls.append(time.monotonic() - t0)
        page_cpu.append(cpu_s() - c0)
        wrong = browser_test.problems_with(dom, browser_test.SECTIONS[:-1])
        if wrong:
            sys.exit("the page did not render: " + "; ".join(wrong))
        full.append(int(re.search(r'data-render-ms="(\d+)"', dom).group(1)))
        charts = re.search(r'data-charts="(\d+)"', dom).group(1)
    if a.screenshots:
        os.makedirs(a.screenshots, exist_ok=True)
        for w in (1280, 390):
            browser_test.screenshot(page, os.path.join(a.screenshots, f"report-{w}.png"), w, 2000)
    print(f"problems: {len(specs)}; tune: {tune_s:.1f} s; attune report: {write_s:.2f} s")
    print(f"page: {size} bytes ({size / 2**20:.2f} MiB), {charts} charts")
    print(f"first screen drawn (navigation start to its charts drawn), {a.repeats} loads: median "
          f"{statistics.median(first)} ms, max {max(first)} ms")
    print(f"every chart drawn (?draw=all, navigation start to the last chart), {a.repeats} loads: "
          f"median {statistics.median(full)} ms, max {max(full)} ms")
    print(f"chromium process wall time with ?draw=all (start, load, dump, exit): median "
          f"{statistics.median(walls):.2f} s")
    print(f"chromium CPU time (user + sys, all its processes) with ?draw=all: median "
          f"{statistics.median(page_cpu):.2f} s; for an empty page: median "
          f"{statistics.median(blank_cpu):.2f} s; the page's share: "
          f"{statistics.median(page_cpu) - statistics.median(blank_cpu):.2f} s")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
