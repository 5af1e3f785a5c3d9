#!/usr/bin/env python3
"""bench/layer: issue 17's targets in one run. For each target shape (Qwen3-Embedding-0.6B prefill
8 x 512 and 1 x 128, Qwen3-8B decode batch 8 at KV 2048):

  a. `attune tune --backend cuda --model M --layer 0 ... --json --db OUT/layer-<shape>.db`, wall
     timed, then the identical re-run, wall timed (its report says how much it measured anew);
  b. `attune export --format json` of that database (a libattune-rt table), examples/layer without
     and with it (layer_us: one CUDA graph of the layer, L2 flushed by reads before each replay),
     and `attune verify` of the table;
  c. bench/layer_torch.py: PyTorch eager, torch.compile, torch.compile(mode="max-autotune") on the
     same layer, timed by the same harness;
  d. OUT/layer.md: per shape the times, the ratios to max-autotune, tuning wall time against
     max-autotune's compile time, the re-run's wall time and the assembled-graph gap, each beside
     issue 17's target. A figure this run did not measure prints as "not measured (why)".

Usage: bench/layer.py ATTUNE_BIN OUT_DIR [--quick] [--shapes ID,...] [--layer-bin PATH]
       bench/layer.py --report OUT_DIR [MORE_DIRS...]   (layer.md again from the saved
                                                        layer-<shape>.json of one or more runs)
Shape ids: emb-8x512, emb-1x128, 8b-decode, llama-decode (all by default; --quick: emb-1x128 alone, fewer
samples and a capped search). Every step runs under one wall budget (LAYER_BUDGET_S, default 540
s, so one device call of 10 minutes returns): a step that would start past it is skipped, one that
runs past its share is stopped (attune by SIGTERM, which still prints its report) and what it
printed is kept. The shapes with max-autotune's ~2 minutes each do not fit one budget: run
them over several calls (--shapes) and merge with --report.

Environment (defaults in brackets):
  LAYER_BUDGET_S [540]        the whole run's wall budget
  LAYER_TUNE_FLAGS []         extra flags of both tunes (e.g. "--max-candidates 40 --patience 12";
                              --quick: "--max-candidates 12 --patience 6")
  LAYER_TUNE_LIMIT_S [240]    the first tune's wall cap; LAYER_RERUN_LIMIT_S [60] the re-run's
  LAYER_TORCH_LIMIT_S [300]   seconds per PyTorch peer; LAYER_PEERS [eager,compile,max-autotune]
  LAYER_SAMPLES [200]         timed samples per figure (examples/layer and the peers)
  LAYER_VERIFY [1]            0: no attune verify;  LAYER_AB_ROUNDS [0]: N > 0 adds attune ab
"""
import datetime
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Issue 17's figures measured on this H200 before (context only; this run's figures are the table).
SHAPES = [
    {"id": "emb-8x512", "title": "Qwen3-Embedding-0.6B, prefill 8 x 512 tokens",
     "model": "models/qwen3-embedding-0.6b.json", "example_model": "qwen3-embedding-0.6b",
     "decode": False, "batch": 8, "tokens": 512, "target_ratio": 1.0,
     "earlier": "eager 1373 us, compile 715 us, max-autotune 360 us after 103 s of autotuning"},
    {"id": "emb-1x128", "title": "Qwen3-Embedding-0.6B, prefill 1 x 128 tokens",
     "model": "models/qwen3-embedding-0.6b.json", "example_model": "qwen3-embedding-0.6b",
     "decode": False, "batch": 1, "tokens": 128, "target_ratio": 2.0,
     "earlier": "eager 2298 us, compile 512 us, max-autotune 130 us after 125 s"},
    {"id": "8b-decode", "title": "Qwen3-8B, one decode step, batch 8, KV 2048",
     "model": "models/qwen3-8b.json", "example_model": "qwen3-8b",
     "decode": True, "batch": 8, "kv": 2048, "target_ratio": 1.0,
     "target_note": "issue 17 asks for 'the same figures' at decode; 1.0x assumed",
     "earlier": None},
    {"id": "llama-decode", "title": "Llama-3.1-8B, one decode step, batch 8, KV 2048",
     "model": "models/llama-3.1-8b.json", "example_model": "llama-3.1-8b",
     "decode": True, "batch": 8, "kv": 2048, "target_ratio": 1.0,
     "target_note": "no target in issue 17; its fourth model, with Llama 3.1's RoPE scaling",
     "earlier": None},
]
PEERS = ["eager", "compile", "max-autotune"]
# The fork examples/layer runs as it is (libattune-rt has no separate residual add); silu_mul,
# rope and norm follow the tune's winner (--silu-mul kernel|epilogue, --rope kernel|epilogue,
# --norm kernel|gemm), and rope's separate form (q/k norm kernels, then RoPE) runs as the kernel
# form.
EXAMPLE_GROUPING = {"residual": {"fused"}, "rope": {"kernel", "epilogue"}}


def log(msg):
    print(f"[layer {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def env_int(name, default):
    try:
        return int(float(os.environ.get(name, default)))
    except ValueError:
        log(f"{name}={os.environ[name]!r} is not a number; using {default}")
        return default


class Budget:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()

    def cap(self, want, reserve=10.0):
        """Seconds a step may take: its own cap, or what is left less a reserve for the report."""
        return max(0.0, min(want, self.left() - reserve))


def last_line(text):
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return lines[-1][:200] if lines else ""


def run(cmd, timeout, log_path=None, env=None, grace=30.0):
    """Runs cmd (a list) in its own process group. Past `timeout` seconds: SIGTERM to the process
    (attune then stops at the candidate in flight and prints its report), after `grace` SIGKILL to
    the group. Output goes to files, not pipes, so a child left holding them (a compile worker)
    cannot keep this waiting. Returns a dict: rc, out, err, wall_s, timed_out, cmd."""
    t0 = time.monotonic()
    timed_out = False
    with tempfile.TemporaryFile("w+", errors="replace") as fo, \
            tempfile.TemporaryFile("w+", errors="replace") as fe:
        try:
            p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, env=env,
                                 cwd=ROOT, start_new_session=True)
        except OSError as e:
            return {"rc": None, "out": "", "err": str(e), "wall_s": 0.0, "timed_out": False,
                    "cmd": shlex.join(cmd)}
        try:
            p.wait(timeout=max(timeout, 1.0))
        except subprocess.TimeoutExpired:
            timed_out = True
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        wall = time.monotonic() - t0
        # Whatever is left in its group (the process itself past its grace, compile workers).
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    if log_path:
        with open(log_path, "w") as f:
            f.write(f"$ {shlex.join(cmd)}\n# rc={p.returncode} wall={wall:.2f}s timed_out={timed_out}\n")
            f.write("--- stdout\n" + out + "\n--- stderr\n" + err)
    return {"rc": p.returncode, "out": out, "err": err, "wall_s": wall, "timed_out": timed_out,
            "cmd": shlex.join(cmd)}


def why_failed(r, what):
    if r["rc"] is None:
        return f"{what} did not start: {r['err'][:160]}"
    if r["timed_out"]:
        return f"{what} stopped at its time cap after {r['wall_s']:.0f} s"
    return f"{what} exited rc={r['rc']}: {last_line(r['err']) or last_line(r['out'])}"


def parse_json(text):
    """The JSON object in text (attune prints logs on stderr, the report alone on stdout)."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        start = text.find("{")
        if start < 0:
            return None
        try:
            return json.loads(text[start:])
        except ValueError:
            return None


# ---------------------------------------------------------------- the steps of one shape


def shape_flags(s):
    if s["decode"]:
        return ["--decode", "--batch", str(s["batch"]), "--kv", str(s["kv"])]
    return ["--batch", str(s["batch"]), "--tokens", str(s["tokens"])]


def summarize_tune(report, r):
    """What layer.md needs from one `attune tune --model --json` run."""
    t = {"wall_s": r["wall_s"], "rc": r["rc"], "timed_out": r["timed_out"], "cmd": r["cmd"]}
    if report is None:
        t["error"] = why_failed(r, "attune tune") if (r["rc"] or r["timed_out"] or r["rc"] is None) \
            else "attune tune printed no JSON report"
        return t
    run_ = report.get("run") or {}
    kernels = report.get("kernels") or []
    t.update({
        "elapsed_s": run_.get("elapsed_s"),
        "check_s": run_.get("check_s"),
        "interrupted": run_.get("interrupted"),
        "device": (report.get("device") or {}).get("name"),
        "winner": report.get("winner"),
        "total_us": report.get("total_us"),
        "kernel_count": report.get("kernel_count"),
        "distinct_kernels": report.get("distinct_kernels"),
        "problems_tuned": report.get("problems_tuned"),
        "assembled": report.get("assembled"),
        "measured": sum(int(k.get("measured") or 0) for k in kernels),
        "replayed": sum(int(k.get("replayed") or 0) for k in kernels),
        "evaluated": sum(int(k.get("evaluated") or 0) for k in kernels),
        # A problem's forms share its search: its re-timed configs once per problem.
        "retimed": {k.get("problem"): k.get("retimed") or [] for k in kernels},
        "winner_kernels": [
            {"op": k.get("op"), "problem": k.get("problem"), "form": k.get("form"),
             "nodes": k.get("nodes"), "count": k.get("count_in_winner"),
             "config": (k.get("best") or {}).get("config"),
             "median_us": (k.get("best") or {}).get("median_us"),
             "failure": k.get("failure"), "stopped_by": k.get("stopped_by")}
            for k in kernels if k.get("count_in_winner")],
    })
    return t


def step_tune(s, ctx, res):
    db = os.path.join(ctx.out, f"layer-{s['id']}.db")
    for f in glob.glob(db + "*"):
        os.remove(f)  # the first tune starts from an empty database: its wall time is a cold tune
    # ... and from an empty cubin cache: a cache that earlier steps of the call (the GPU tests,
    # another shape) filled would make it a warm one.
    cache = os.path.join(ctx.out, f"cubin-{s['id']}")
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, ATTUNE_CACHE_DIR=cache)
    cmd = [ctx.attune, "tune", "--backend", "cuda", "--model", os.path.join(ROOT, s["model"]),
           "--layer", "0", *shape_flags(s), "--json", "--db", db, *ctx.tune_flags]
    for key, cap_s in (("tune", ctx.tune_limit), ("rerun", ctx.rerun_limit)):
        cap = ctx.budget.cap(cap_s)
        if cap < 15:
            res[key] = {"error": "budget spent before this step (LAYER_BUDGET_S)"}
            continue
        log(f"{s['id']}: attune {key} (cap {cap:.0f} s)")
        r = run(cmd, cap, os.path.join(ctx.out, f"layer-{s['id']}-{key}.log"), env=env)
        report = parse_json(r["out"])
        if report is not None:
            with open(os.path.join(ctx.out, f"layer-{s['id']}-{key}.json"), "w") as f:
                json.dump(report, f, indent=1)
        res[key] = summarize_tune(report, r)
        t = res[key]
        log(f"{s['id']}: {key} rc={r['rc']} wall {r['wall_s']:.1f} s"
            + (f", winner total {t['total_us']}, assembled {t.get('assembled')}" if report else
               f": {t.get('error')}"))
    res["db"] = db


def example_cmd(s, ctx, table=None, winner=None):
    cmd = [ctx.layer_bin, "--model", s["example_model"], *shape_flags(s),
           "--steps", str(ctx.samples), "--warmup", "10"]
    if (winner or {}).get("silu_mul") == "epilogue":
        cmd += ["--silu-mul", "epilogue"]
    if (winner or {}).get("rope") == "epilogue":
        cmd += ["--rope", "epilogue"]
    if (winner or {}).get("norm") == "gemm":
        cmd += ["--norm", "gemm"]
    return cmd + (["--table", table] if table else [])


def parse_example(r):
    e = {"rc": r["rc"], "wall_s": r["wall_s"], "cmd": r["cmd"]}
    m = re.findall(r"^layer_us=([0-9.eE+-]+)", r["out"], re.M)
    if r["rc"] != 0 or not m:
        e["error"] = why_failed(r, "examples/layer") if r["rc"] != 0 else "printed no layer_us="
        return e
    e["layer_us"] = float(m[-1])
    e["dispatch"] = re.findall(r"^dispatch (\S+)\s+(.*)$", r["out"], re.M)
    c = re.search(r"^runtime: (\d+) hits, (\d+) misses, (\d+) distinct shapes(.*)$", r["out"], re.M)
    if c:
        e["hits"], e["misses"], e["shapes"] = int(c.group(1)), int(c.group(2)), int(c.group(3))
        e["mismatch"] = "another device" in c.group(4)
    return e


def step_example(s, ctx, res):
    if not ctx.layer_bin or not os.path.exists(ctx.layer_bin):
        why = f"no examples/layer binary ({ctx.layer_bin or 'give --layer-bin'})"
        res["untuned"] = res["tuned"] = res["dependent"] = {"error": why}
        return
    table = None
    cap = ctx.budget.cap(90)
    if cap < 10:
        res["export"] = {"error": "budget spent before this step"}
    else:
        tdir = os.path.join(ctx.out, f"tuned-{s['id']}")
        for f in glob.glob(os.path.join(tdir, "*")):
            os.remove(f)
        r = run([ctx.attune, "export", "--format", "json", "-o", tdir + "/", "--db", res["db"]], cap,
                os.path.join(ctx.out, f"layer-{s['id']}-export.log"))
        tables = sorted(glob.glob(os.path.join(tdir, "*.json")))
        res["export"] = {"rc": r["rc"], "said": last_line(r["out"]) or last_line(r["err"])}
        if r["rc"] == 0 and tables:
            table = tables[0]
            res["export"]["table"] = table
        else:
            res["export"]["error"] = why_failed(r, "attune export") if r["rc"] else "no table written"
    # "dependent": the tuned table again with attune's kernels launched programmatically dependent
    # (ATTUNE_DEPENDENT_LAUNCH=1), to show what that saves in the same run.
    for key, tab in (("untuned", None), ("tuned", table), ("dependent", table)):
        if key != "untuned" and not table:
            res[key] = {"error": "no table: " + res["export"].get("error", "?")}
            continue
        cap = ctx.budget.cap(120)
        if cap < 10:
            res[key] = {"error": "budget spent before this step"}
            continue
        env = dict(os.environ, ATTUNE_LOG_TUNED="1") if tab else None
        if key == "dependent":
            env = dict(os.environ, ATTUNE_DEPENDENT_LAUNCH="1")
        winner = (res.get("tune") or {}).get("winner")
        r = run(example_cmd(s, ctx, tab, winner), cap,
                os.path.join(ctx.out, f"layer-{s['id']}-example-{key}.log"), env)
        res[key] = parse_example(r)
        log(f"{s['id']}: examples/layer {key}: {res[key].get('layer_us', res[key].get('error'))}")
    if table and os.environ.get("LAYER_VERIFY", "1") != "0":
        cap = ctx.budget.cap(120)
        if cap >= 15:
            r = run([ctx.attune, "verify", table], cap, os.path.join(ctx.out, f"layer-{s['id']}-verify.log"))
            res["verify"] = {"rc": r["rc"], "timed_out": r["timed_out"],
                             "tail": (r["out"] + r["err"]).strip().splitlines()[-12:]}
            log(f"{s['id']}: attune verify rc={r['rc']}")
    rounds = env_int("LAYER_AB_ROUNDS", 0)
    if table and rounds > 0:
        cap = ctx.budget.cap(300)
        if cap >= 30:
            ref = shlex.join(example_cmd(s, ctx, None, (res.get("tune") or {}).get("winner")))
            r = run([ctx.attune, "ab", "--ref", ref, "--cand", ref + " --table " + shlex.quote(table),
                     "--metric", "layer_us", "--rounds", str(rounds)], cap,
                    os.path.join(ctx.out, f"layer-{s['id']}-ab.log"))
            res["ab"] = {"rc": r["rc"], "tail": (r["out"] + r["err"]).strip().splitlines()[-10:]}


def step_torch(s, ctx, res):
    cap = ctx.budget.cap(ctx.torch_limit * len(ctx.peers) + 60)
    if cap < 30:
        res["torch"] = {"error": "budget spent before this step (LAYER_BUDGET_S)"}
        return
    peer_limit = min(ctx.torch_limit, cap - 20)
    cmd = [sys.executable, os.path.join(ROOT, "bench", "layer_torch.py"),
           "--model", os.path.join(ROOT, s["model"]), *shape_flags(s), "--samples", str(ctx.samples),
           "--peers", ",".join(ctx.peers), "--peer-limit-s", f"{peer_limit:.0f}", "--check"]
    log(f"{s['id']}: PyTorch peers (cap {cap:.0f} s, {peer_limit:.0f} s per peer)")
    r = run(cmd, cap, os.path.join(ctx.out, f"layer-{s['id']}-torch.log"), grace=10)
    j = parse_json(r["out"])
    if j is None:
        # The process died or was stopped: the peers it finished said so on stderr.
        j = {"peers": {}, "error": why_failed(r, "layer_torch.py")}
        for m in re.finditer(r"^peer-result (\S+) (\{.*\})$", r["err"], re.M):
            try:
                j["peers"][m.group(1)] = json.loads(m.group(2))
            except ValueError:
                pass
    j["wall_s"] = r["wall_s"]
    for p in ctx.peers:
        j["peers"].setdefault(p, {"layer_us": None, "error": j.get("error") or "not reported"})
    res["torch"] = j


# ---------------------------------------------------------------- the report


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def us(v, why="?"):
    why = re.sub(r"^not measured:?\s*", "", str(why or "?"))
    return f"{v:.1f} us" if num(v) else f"not measured ({why})"


def verdict(ok):
    return "**met**" if ok else "**missed**"


def shape_md(s, res):
    L = [f"## {s['title']}", ""]
    tune, rerun = res.get("tune") or {}, res.get("rerun") or {}
    torch_ = res.get("torch") or {}
    peers = torch_.get("peers") or {}
    asm = tune.get("assembled") or {}
    mat = (peers.get("max-autotune") or {}).get("layer_us")
    mat_why = (peers.get("max-autotune") or {}).get("error") or torch_.get("error") or "no PyTorch run"

    def ratio(v):
        if not num(v) or not num(mat) or v <= 0:
            return "-"
        return f"{mat / v:.2f}x"

    tune_why = tune.get("error") or "no report"
    asm_why = asm.get("note") or tune_why
    # The target row is examples/layer: the tuned layer as an application runs it through
    # libattune-rt, timed as the PyTorch peers are. The tune's own figures are the gap's two sides.
    rows = [
        ("attune, tuned: examples/layer with the table", (res.get("tuned") or {}).get("layer_us"),
         (res.get("tuned") or {}).get("error", "not run")),
        ("attune, tuned: the assembled graph (tune's check)", asm.get("assembled_us") if asm.get("measured") else None, asm_why),
        ("attune, tuned: sum of isolated kernel times", tune.get("total_us"), tune_why),
        ("attune, tuned, dependent launches (ATTUNE_DEPENDENT_LAUNCH=1)", (res.get("dependent") or {}).get("layer_us"),
         (res.get("dependent") or {}).get("error", "not run")),
        ("attune, untuned: examples/layer without a table", (res.get("untuned") or {}).get("layer_us"),
         (res.get("untuned") or {}).get("error", "not run")),
    ]
    for p, label in (("eager", "PyTorch eager"), ("compile", "torch.compile"),
                     ("max-autotune", 'torch.compile(mode="max-autotune")')):
        pr = peers.get(p) or {}
        rows.append((label, pr.get("layer_us"), pr.get("error") or torch_.get("error") or "no PyTorch run"))
    target = f">= {s['target_ratio']:.1f}x" + (f" ({s['target_note']})" if s.get("target_note") else "")
    L += ["| layer | time | max-autotune / it | target |", "|---|---:|---:|---|"]
    for i, (label, v, why) in enumerate(rows):
        tgt = ""
        if i == 0:
            tgt = target + (": " + verdict(mat / v >= s["target_ratio"]) if num(v) and num(mat) else "")
        L.append(f"| {label} | {us(v, why)} | {ratio(v)} | {tgt} |")
    L.append("")
    L.append("Ratios are max-autotune's time over the row's (above 1: faster than max-autotune).")
    # Tuning wall time against max-autotune's compile time.
    mat_c = (peers.get("max-autotune") or {}).get("compile_s")
    tw = tune.get("wall_s") if "error" not in tune else None
    line = "- attune's tuning wall time: "
    if num(tw):
        line += f"{tw:.1f} s" + (" (stopped at its cap: a partial tune)" if tune.get("timed_out") or tune.get("interrupted") else "")
        line += f" ({tune.get('measured', '?')} candidates measured, {tune.get('problems_tuned', '?')} problems searched"
        # Where the wall time went past the searches' limit (the report's run.elapsed_s and
        # run.check_s; the rest is start-up, planning and exit).
        el, ck = tune.get("elapsed_s"), tune.get("check_s")
        if num(el) and num(ck):
            line += f"; searches {el:.1f} s, assembled check {ck:.1f} s, the rest {tw - el - ck:.1f} s"
        line += ")"
    else:
        line += us(None, tune_why)
    line += "; max-autotune's compile: " + (f"{mat_c:.1f} s" if num(mat_c) else us(None, mat_why))
    line += ". Target: below max-autotune's compile"
    if num(tw) and num(mat_c):
        line += ": " + verdict(tw < mat_c)
    L.append(line)
    rw = rerun.get("wall_s") if "error" not in rerun else None
    line = "- identical re-run: "
    if num(rw):
        line += (f"{rw:.1f} s, {rerun.get('measured', '?')} candidates measured anew, "
                 f"{rerun.get('replayed', '?')} answered from the database")
        if tune.get("timed_out") or tune.get("interrupted"):
            line += " (after a partial first tune, so the re-run went on searching)"
    else:
        line += f"not measured ({rerun.get('error') or 'not run'})"
    line += ". Target: under 10 s" + (": " + verdict(rw < 10.0) if num(rw) else "")
    L.append(line)
    # The best few configs of each search timed again (attune tune --retime-best N): how far the
    # second timings moved from the first.
    again = [t for ts in (tune.get("retimed") or {}).values() for t in ts
             if num(t.get("first_us")) and num(t.get("again_us")) and t["first_us"] > 0]
    if again:
        ch = sorted(100 * (t["again_us"] / t["first_us"] - 1) for t in again)
        L.append(f"- timed again after the searches: {len(again)} configs of "
                 f"{sum(1 for ts in tune['retimed'].values() if ts)} problems; new time against "
                 f"the first: median {ch[len(ch) // 2]:+.1f}%, from {ch[0]:+.1f}% to {ch[-1]:+.1f}%")
    gap = asm.get("gap")
    line = "- assembled-graph gap: "
    if asm.get("measured") and num(gap):
        line += (f"{100 * gap:+.1f}% ({asm.get('assembled_us'):.1f} us assembled against "
                 f"{asm.get('isolated_sum_us'):.1f} us isolated)")
    else:
        line += us(None, asm_why)
    line += ". Target: |gap| under 5%" + (": " + verdict(abs(gap) < 0.05) if asm.get("measured") and num(gap) else "")
    L.append(line)
    if rerun.get("assembled") and (rerun["assembled"] or {}).get("measured") and num(rerun["assembled"].get("gap")):
        L.append(f"- the re-run's own check: gap {100 * rerun['assembled']['gap']:+.1f}%")
    L.append("")
    # Where the gap is: each kernel alone and behind its predecessor in the assembled graph.
    per = asm.get("per_kernel") or []
    if per and all(num(k.get("in_graph_us")) for k in per) and num(asm.get("graph_floor_us")):
        L += ["Where the gap is (in the graph: the layer's first k kernels timed as one CUDA graph "
              "behind an empty kernel, k = 0..n, each minus the one before; launching a graph of "
              f"the empty kernel alone: {asm['graph_floor_us']:.2f} us):", "",
              "| role | isolated | in the graph | change | problem |", "|---|---:|---:|---:|---|"]
        for k in per:
            L.append(f"| {k['role']} | {k['isolated_us']:.2f} us | {k['in_graph_us']:.2f} us | "
                     f"{100 * (k['in_graph_us'] / k['isolated_us'] - 1):+.1f}% | `{k['problem']}` |")
        L.append(f"| sum | {sum(k['isolated_us'] for k in per):.2f} us | "
                 f"{sum(k['in_graph_us'] for k in per):.2f} us | | |")
        L.append("")
    # The winner and its kernels.
    if tune.get("winner") is not None or tune.get("winner_kernels"):
        w = tune.get("winner") or {}
        L.append("Winner: " + (", ".join(f"{k}={v}" for k, v in sorted(w.items())) or "none")
                 + f"; {tune.get('kernel_count', '?')} kernels, {tune.get('distinct_kernels', '?')} distinct.")
        differs = {k: v for k, v in EXAMPLE_GROUPING.items() if w.get(k) not in (None, *v)}
        if differs:
            L.append("examples/layer runs residual=fused (libattune-rt has no separate "
                     "residual add) and rope=kernel or epilogue; the winner differs in "
                     + ", ".join(f"{k}={w[k]}" for k in differs)
                     + ", so its figure is of another grouping than the tune's.")
        L += ["", "| count | kernel | form | best | config |", "|---|---|---|---:|---|"]
        for k in tune.get("winner_kernels") or []:
            L.append(f"| {k.get('count')} | `{k.get('problem')}` | {k.get('form') or ''} | "
                     f"{us(k.get('median_us'), k.get('failure') or 'no passing config')} | `{k.get('config') or ''}` |")
        L.append("")
    t = res.get("tuned") or {}
    if t.get("dispatch"):
        L.append(f"examples/layer with the table: {t.get('hits', '?')} hits, {t.get('misses', '?')} misses"
                 + (" (the table is for another device)" if t.get("mismatch") else "") + "; per call:")
        L += [f"- {name}: {what}" for name, what in t["dispatch"]]
        L.append("")
    if res.get("verify"):
        v = res["verify"]
        L += [f"attune verify of the table: rc={v.get('rc')}" + (" (stopped at its cap)" if v.get("timed_out") else ""),
              "", "```", *v.get("tail", []), "```", ""]
    if res.get("ab"):
        L += [f"attune ab (layer_us): rc={res['ab'].get('rc')}", "", "```", *res["ab"].get("tail", []), "```", ""]
    if peers:
        about = ", ".join(f"{k} {torch_.get(k)}" for k in ("torch", "device") if torch_.get(k))
        L.append("PyTorch peers" + (f" ({about})" if about else "") + ":")
        for p in PEERS:
            pr = peers.get(p)
            if not pr:
                continue
            bits = []
            if num(pr.get("compile_s")):
                bits.append(f"first call {pr['compile_s']:.1f} s")
            if pr.get("how_timed"):
                bits.append(pr["how_timed"])
            if pr.get("gqa"):
                bits.append(f"GQA {pr['gqa']}")
            c = pr.get("check")
            if c:
                bits.append(f"max |out - eager| {c.get('max_abs_diff'):.3g} (max |eager| {c.get('ref_max_abs'):.3g})")
            if pr.get("error"):
                bits.append("error: " + pr["error"])
            L.append(f"- {p}: " + "; ".join(bits))
        L.append("")
    if s.get("earlier"):
        L.append(f"Issue 17's earlier measurement on this H200 (another run, for context): {s['earlier']}.")
        L.append("")
    return L


NOTES = """Notes on what is compared:
- The target row is examples/layer: one CUDA graph of the layer's kernels through libattune-rt,
  replayed after an L2 flush by reads, CUDA events around each replay, median. The PyTorch peers
  are timed by bench/layer_torch.py the same way (a 256 MiB read flush before each replay), eager
  and torch.compile as one captured CUDA graph, max-autotune through its own CUDA graphs.
- The tune's assembled check and its isolated kernel times (the gap's two sides) are timed by
  attune's deploy regime: what the layer, or one kernel, adds to a CUDA graph behind an empty
  kernel (a graph of both less a graph of the empty kernel alone, each replayed after an L2 flush by
  reads, CUDA events around each replay, medians). examples/layer and the peers' times include
  launching their graph (the graph floor below, about 2.9 us on the H200); the assembled check's does not.
- attune tunes layer 0, which has no residual add before its first RMSNorm, and leaves the layer's
  last residual add to the next layer's RMSNorm; examples/layer and the PyTorch peers do both adds
  of a layer in the middle of the model.
- At a prefill, examples/layer's O projection reads attention's [batch, heads, seq, head] output as
  [rows, heads * head] with no transpose (a real model transposes; PyTorch does).
"""


def write_report(out_dir, results, header_lines):
    L = ["# Issue 17: a tuned decoder layer against PyTorch", ""] + header_lines + [""]
    for s in SHAPES:
        res = results.get(s["id"])
        if res is None:
            continue
        L += shape_md(s, res)
    L += NOTES.splitlines()
    path = os.path.join(out_dir, "layer.md")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(L) + "\n")
    os.replace(path + ".tmp", path)
    return path


# ---------------------------------------------------------------- main


class Context:
    pass


def main(argv):
    if argv and argv[0] == "--report":
        if len(argv) < 2:
            sys.exit("usage: bench/layer.py --report OUT_DIR [MORE_DIRS...]")
        results = {}
        for d in argv[1:]:
            for p in sorted(glob.glob(os.path.join(d, "layer-*.json"))):
                try:
                    j = json.load(open(p))
                except ValueError:
                    continue
                if isinstance(j, dict) and j.get("shape") in {s["id"] for s in SHAPES}:
                    results[j["shape"]] = j["result"]
        path = write_report(argv[1], results, [f"Merged by bench/layer.py --report from {', '.join(argv[1:])}."])
        print(open(path).read())
        return 0
    pos = [a for a in argv if not a.startswith("--")]
    if len(pos) < 2:
        sys.exit(__doc__)
    ctx = Context()
    ctx.attune, ctx.out = os.path.abspath(pos[0]), os.path.abspath(pos[1])
    quick = "--quick" in argv
    opts = {}
    for i, a in enumerate(argv):
        if a in ("--shapes", "--layer-bin", "--budget-s") and i + 1 < len(argv):
            opts[a] = argv[i + 1]
    os.makedirs(ctx.out, exist_ok=True)
    wanted = (opts.get("--shapes") or os.environ.get("LAYER_SHAPES") or ("emb-1x128" if quick else "")).split(",")
    wanted = [w.strip() for w in wanted if w.strip()]
    ids = [s["id"] for s in SHAPES]
    for w in wanted:
        if w not in ids:
            sys.exit(f"bench/layer.py: unknown shape {w!r}; the shapes are {', '.join(ids)}")
    shapes = [s for s in SHAPES if not wanted or s["id"] in wanted]
    default_bin = os.path.join(ROOT, "gpu-bundle", "bin", "layer")
    if not os.path.exists(default_bin):
        default_bin = os.path.join(ROOT, "build", "examples", "layer", "layer")
    ctx.layer_bin = os.path.abspath(opts.get("--layer-bin") or default_bin)
    ctx.budget = Budget(float(opts.get("--budget-s") or env_int("LAYER_BUDGET_S", 540)))
    flags = os.environ.get("LAYER_TUNE_FLAGS")
    if flags is None:
        flags = "--max-candidates 12 --patience 6" if quick else ""
    ctx.tune_flags = shlex.split(flags)
    ctx.tune_limit = env_int("LAYER_TUNE_LIMIT_S", 240)
    ctx.rerun_limit = env_int("LAYER_RERUN_LIMIT_S", 60)
    ctx.torch_limit = env_int("LAYER_TORCH_LIMIT_S", 300)
    ctx.samples = env_int("LAYER_SAMPLES", 50 if quick else 200)
    ctx.peers = [p for p in os.environ.get("LAYER_PEERS", ",".join(PEERS)).split(",") if p in PEERS]
    header = [
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"`bench/layer.py {' '.join(argv)}`; attune tune flags: `{shlex.join(ctx.tune_flags) or '(defaults)'}`; "
        f"samples {ctx.samples}; budget {ctx.budget.left():.0f} s; examples/layer: `{ctx.layer_bin}`.",
    ]
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        if smi.returncode == 0 and smi.stdout.strip():
            header.append(f"GPU: {smi.stdout.strip().splitlines()[0]}.")
    except (OSError, subprocess.SubprocessError):
        pass
    results = {}
    for s in shapes:
        res = {}
        results[s["id"]] = res
        for step in (step_tune, step_example, step_torch):
            try:
                step(s, ctx, res)
            except Exception as e:  # noqa: BLE001 - one step's bug must not lose the others
                import traceback
                traceback.print_exc()
                res.setdefault("errors", []).append(f"{step.__name__}: {type(e).__name__}: {e}")
            # Saved after every step: a run stopped from outside still leaves what it measured.
            with open(os.path.join(ctx.out, f"layer-{s['id']}.json"), "w") as f:
                json.dump({"shape": s["id"], "result": res}, f, indent=1, default=str)
            write_report(ctx.out, results, header)
    path = write_report(ctx.out, results, header)
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
