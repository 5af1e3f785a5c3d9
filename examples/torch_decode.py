#!/usr/bin/env python3
"""torch_decode: a PyTorch decoder's decode step (Qwen3-0.6B or -8B layer shapes, head size 128;
RoPE left out) whose linear layers run through attune.Runtime, by a torch.library custom op that
this example registers (the attune package itself imports no framework).

    python3 examples/torch_decode.py --backend torch             # torch.nn.functional.linear
    ATTUNE_HARVEST=shapes.txt python3 examples/torch_decode.py --backend attune --steps 5
    python3 examples/torch_decode.py --backend attune --table tuned/nvidia-h200-sm_90a-132sm.json
    python3 examples/torch_decode.py --walk out/          # harvest -> tune -> export -> verify -> ab

Each run prints `step_us=...`, the median time of one decode step (CUDA events; by default each
step is replayed as a CUDA graph, as serving loops run decode: the host's launch cost then drops
out, --eager keeps it), which `attune ab --metric step_us` compares. --walk does the whole flow of
examples/decode_loop from Python: a run with no table harvests the GEMM shapes it misses,
attune.tune() tunes them, `attune export` writes the table, `attune verify` checks it binds, and
`attune ab` compares the tuned step with plain PyTorch, its ref-to-ref drift measured.
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F

import attune

# The Runtime the custom op dispatches through (set by main before the model runs).
RUNTIME = None


@torch.library.custom_op("attune_example::linear", mutates_args=())
def attune_linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """torch.nn.functional.linear(x, w) through libattune-rt, on PyTorch's current stream."""
    out = x.new_empty(*x.shape[:-1], w.shape[0])
    RUNTIME.gemm(x, w, out, stream=torch.cuda.current_stream().cuda_stream)
    return out


@attune_linear.register_fake
def _(x, w):
    return x.new_empty(*x.shape[:-1], w.shape[0])


MODELS = {  # hidden, q heads, kv heads, MLP width, layers (head size 128)
    "0.6b": (1024, 16, 8, 3072, 28),
    "8b": (4096, 32, 8, 12288, 36),
}
HEAD = 128


class Layer(torch.nn.Module):
    def __init__(self, hidden, q_heads, kv_heads, mlp, linear):
        super().__init__()
        def weight(n, k):
            return torch.nn.Parameter(torch.randn(n, k) * k ** -0.5, requires_grad=False)
        self.q_heads, self.kv_heads, self.linear = q_heads, kv_heads, linear
        self.wq, self.wk, self.wv = (weight(q_heads * HEAD, hidden), weight(kv_heads * HEAD, hidden),
                                     weight(kv_heads * HEAD, hidden))
        self.wo = weight(hidden, q_heads * HEAD)
        self.wgate, self.wup, self.wdown = weight(mlp, hidden), weight(mlp, hidden), weight(hidden, mlp)
        self.norm1 = torch.nn.Parameter(torch.ones(hidden), requires_grad=False)
        self.norm2 = torch.nn.Parameter(torch.ones(hidden), requires_grad=False)

    def forward(self, x, k_cache, v_cache):
        b = x.shape[0]
        h = F.rms_norm(x, x.shape[-1:], self.norm1, 1e-6)
        q = self.linear(h, self.wq).view(b, self.q_heads, 1, HEAD)
        # This step's k and v would be appended to the cache; the shapes are what is timed.
        self.linear(h, self.wk)
        self.linear(h, self.wv)
        a = F.scaled_dot_product_attention(q, k_cache, v_cache, enable_gqa=True)
        x = x + self.linear(a.reshape(b, -1), self.wo)
        h = F.rms_norm(x, x.shape[-1:], self.norm2, 1e-6)
        mlp = F.silu(self.linear(h, self.wgate)) * self.linear(h, self.wup)
        return x + self.linear(mlp, self.wdown)


class Decoder(torch.nn.Module):
    def __init__(self, model, layers, linear):
        super().__init__()
        hidden, q_heads, kv_heads, mlp, n = MODELS[model]
        self.layers = torch.nn.ModuleList(
            Layer(hidden, q_heads, kv_heads, mlp, linear) for _ in range(layers or n))

    def forward(self, x, k_cache, v_cache):
        for layer in self.layers:
            x = layer(x, k_cache, v_cache)
        return x


def run(args):
    global RUNTIME
    torch.manual_seed(0)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    if args.backend == "attune":
        RUNTIME = attune.Runtime(args.table)
        linear = torch.ops.attune_example.linear
    else:
        linear = F.linear
    hidden, _, kv_heads, _, _ = MODELS[args.model]
    with torch.device("cuda"):
        model = Decoder(args.model, args.layers, linear).to(dtype)
        x = torch.randn(args.tokens, hidden, dtype=dtype)
        k_cache = torch.randn(args.tokens, kv_heads, args.kv, HEAD, dtype=dtype)
        v_cache = torch.randn_like(k_cache)
    stream = torch.cuda.Stream()
    with torch.inference_mode(), torch.cuda.stream(stream):
        for _ in range(max(args.warmup, 1)):  # first calls compile or load every kernel
            model(x, k_cache, v_cache)
        step = lambda: model(x, k_cache, v_cache)
        if not args.eager:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                model(x, k_cache, v_cache)
            step = graph.replay
        times = []
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(args.steps):
            start.record(stream)
            step()
            stop.record(stream)
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1000)
    print(f"model qwen3-{args.model}, {args.tokens} tokens, kv {args.kv}, "
          f"{len(model.layers)} layers, {args.dtype}, {'eager' if args.eager else 'graph replay'}, "
          f"linear: {args.backend}{' table ' + args.table if args.table else ''}")
    if RUNTIME is not None:
        report = RUNTIME.dispatch_report()
        print(f"runtime: {report['hits']} hits, {report['misses']} misses, {report['shapes']} "
              f"distinct shapes{' (table tuned for another device)' if report['device_mismatch'] else ''}")
        for d in report["dispatches"]:
            print(f"  {d['problem']}: {d['why']} -> {d['config']}")
    print(f"step_us={statistics.median(times):.2f} (median of {len(times)} steps; "
          f"min {min(times):.2f}, max {max(times):.2f})")


def sh(argv, **kw):
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    done = subprocess.run(argv, text=True, capture_output=True, **kw)
    print(done.stdout + done.stderr, end="", flush=True)
    if done.returncode != 0:
        sys.exit(f"torch_decode: {argv[1]} exited {done.returncode}")
    return done


def walk(args):
    """harvest -> tune -> export -> verify -> ab, into args.walk."""
    out = os.path.abspath(args.walk)
    os.makedirs(out, exist_ok=True)
    cli = attune.find_cli()
    me = [sys.executable, os.path.abspath(__file__), "--model", args.model, "--tokens",
          str(args.tokens), "--kv", str(args.kv), "--dtype", args.dtype] + (
              ["--layers", str(args.layers)] if args.layers else [])
    shapes, db = os.path.join(out, "shapes.txt"), os.path.join(out, "tune.db")
    for f in (shapes, db):
        if os.path.exists(f):
            os.remove(f)
    # 1. No table: every GEMM is a miss, and ATTUNE_HARVEST records its shape.
    sh(me + ["--backend", "attune", "--steps", "3", "--warmup", "1", "--eager"],
       env={**os.environ, "ATTUNE_HARVEST": shapes})
    print(open(shapes).read(), end="")
    # 2. Tune them through the Python API (the report is `attune tune --json`'s).
    report = attune.tune(shapes=shapes, db=db, max_candidates=args.candidates,
                         patience=args.patience, time_limit=args.tune_seconds)
    for p in report["problems"]:
        print(f"tuned {p['problem']}: {p['baseline']['median_us']:.2f} -> "
              f"{p['best']['median_us']:.2f} us ({p['speedup']:.3f}x, {p['measured']} measured, "
              f"stopped by {p['stopped_by']})")
    # 3. Export the table, 4. verify it binds through libattune-rt.
    tuned = os.path.join(out, "tuned") + "/"
    sh([cli, "export", "--format", "json", "-o", tuned, "--db", db])
    table = os.path.join(tuned, sorted(os.listdir(tuned))[0])
    sh([cli, "verify", table])
    sh(me + ["--backend", "attune", "--table", table, "--steps", "20"],
       env={**os.environ, "ATTUNE_LOG_TUNED": "1"})
    # 5. A/B against plain torch.nn.functional.linear, drift measured.
    ref = shlex.join(me + ["--backend", "torch"])
    cand = shlex.join(me + ["--backend", "attune", "--table", table])
    sh([cli, "ab", "--ref", ref, "--cand", cand, "--metric", "step_us", "--rounds",
        str(args.rounds)])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=["torch", "attune"], default="attune")
    p.add_argument("--table", help="a tuned table (attune export); none: every call a miss")
    p.add_argument("--model", choices=sorted(MODELS), default="0.6b")
    p.add_argument("--tokens", type=int, default=1, help="sequences decoded at once (GEMM M)")
    p.add_argument("--kv", type=int, default=1024, help="KV cache positions per sequence")
    p.add_argument("--layers", type=int, default=0, help="0: the model's")
    p.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--eager", action="store_true", help="launch each step's kernels, no graph")
    p.add_argument("--walk", metavar="DIR", help="harvest -> tune -> export -> verify -> ab")
    p.add_argument("--tune-seconds", type=float, default=120, help="--walk: attune tune --time-limit")
    p.add_argument("--candidates", type=int, default=40, help="--walk: --max-candidates")
    p.add_argument("--patience", type=int, default=15, help="--walk: --patience")
    p.add_argument("--rounds", type=int, default=4, help="--walk: attune ab --rounds")
    args = p.parse_args()
    if args.tokens < 1 or args.steps < 1 or args.kv < 1 or args.layers < 0:
        p.error("--tokens, --steps and --kv must be positive, --layers not negative")
    walk(args) if args.walk else run(args)


if __name__ == "__main__":
    main()
