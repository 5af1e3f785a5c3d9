#!/usr/bin/env python3
"""bench/layer_torch: issue 17's PyTorch peers, one decoder layer of a Hugging Face-style Qwen3 /
Llama model in plain PyTorch (random weights, the config's dtype, causal), timed the way attune's
deploy regime times its assembled layer (examples/layer): CUDA events around single replays, the
L2 flushed by reads before each one outside the timed region, median of --samples.

The layer, as transformers' Qwen3DecoderLayer / LlamaDecoderLayer computes it: input RMSNorm
(fp32 inside, as theirs), one fused QKV linear [(q_heads + 2 kv_heads) * head, hidden], per-head
q/k RMSNorm where qk_norm, RoPE (rotate-half; cos/sin per position computed once outside the layer
as a model does, Llama 3's frequency rewrite where rope_scaling says llama3), SDPA (prefill: causal
over the prompt, K/V used directly as an embedding model without a cache does; decode: one new
token per sequence written into a KV cache of depth --kv at its last position, attending to all of
it), O linear over the heads transposed back to [batch, seq, heads * head], the residual add,
post-attention RMSNorm, one fused gate/up linear, SiLU(gate) * up, down linear, the residual add.

Peers: eager, torch.compile (default mode), torch.compile(mode="max-autotune"). compile_s is the
wall time of each peer's first call through a synchronize (for eager, its first call; for the
compiled peers, compilation and autotuning). Timing: eager and compile-default are captured in a
CUDA graph (torch.cuda.graph) after a warm-up and the graph replayed; max-autotune runs its own
CUDA graphs (cudagraph trees), so its compiled module is called directly. Before each timed
replay: the flush (a sum over --flush-mib MiB), then a GPU sleep of about 1 ms so that the host's
enqueueing (Python, guards, cudagraph-tree bookkeeping) finishes while the GPU is still busy and
drops out of the events' interval for every peer alike. A peer whose capture fails is timed on
direct calls the same way, and its how_timed says so.

Each peer runs in its own try (one failing keeps the others) under --peer-limit-s (SIGALRM; a
compile stuck in C code is stopped when it returns to Python). Inductor's and Triton's on-disk
caches go to a fresh temporary folder per peer unless --warm-cache, so compile_s is a cold compile
(kernels already in the process's memory from an earlier peer may still be reused).

Output: one JSON object on stdout ({..., "peers": {name: {layer_us, compile_s, how_timed, ...}}});
on stderr a readable line per peer and a line "peer-result NAME {json}" as each peer finishes
(bench/layer.py reads those when the process does not live to print the object).

Usage: bench/layer_torch.py --model models/qwen3-embedding-0.6b.json --batch 8 --tokens 512
       bench/layer_torch.py --model models/qwen3-8b.json --decode --batch 8 --kv 2048
       [--peers eager,compile,max-autotune] [--samples 200] [--flush-mib 256] [--check]
       [--gqa auto|enable|repeat] [--peer-limit-s 400] [--warm-cache]
"""
import argparse
import json
import math
import os
import signal
import sys
import tempfile
import time
import traceback

PEERS = ("eager", "compile", "max-autotune")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a models/*.json config")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--tokens", type=int, help="prefill: tokens per sequence")
    p.add_argument("--decode", action="store_true", help="one decode step against --kv")
    p.add_argument("--kv", type=int, help="decode: KV cache depth including the new token")
    p.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--flush-mib", type=int, default=256)
    p.add_argument("--check", action="store_true", help="compare each peer's output with eager's")
    p.add_argument("--gqa", default="auto", choices=("auto", "enable", "repeat"),
                   help="SDPA's GQA: enable_gqa=True, K/V repeated to the query heads, or auto "
                        "(enable, falling back to repeat for a peer that fails with it)")
    p.add_argument("--peer-limit-s", type=float, default=400.0, help="seconds per peer (default 400)")
    p.add_argument("--warm-cache", action="store_true",
                   help="keep Inductor's and Triton's usual caches (default: a fresh folder)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.decode == (a.tokens is not None):
        p.error("give --tokens T (prefill) or --decode --kv L")
    if a.decode and (a.kv is None or a.kv < 1):
        p.error("--decode needs --kv L (L >= 1)")
    if not a.decode and a.tokens < 1:
        p.error("--tokens must be positive")
    if a.batch < 1 or a.samples < 1:
        p.error("--batch and --samples must be positive")
    a.peers = [s.strip() for s in a.peers.split(",") if s.strip()]
    for s in a.peers:
        if s not in PEERS:
            p.error(f"unknown peer {s!r}: the peers are {', '.join(PEERS)}")
    return a


ARGS = parse_args(sys.argv[1:])
if not ARGS.warm_cache:
    # Before torch is imported: both read these when they first compile.
    _cache = tempfile.mkdtemp(prefix="layer-torch-cache-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = _cache
    os.environ["TRITON_CACHE_DIR"] = os.path.join(_cache, "triton")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DT = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16,
      "float16": torch.float16}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def load_config(path):
    with open(path) as f:
        c = json.load(f)
    heads = int(c["num_attention_heads"])
    cfg = {
        "name": c.get("name", os.path.basename(path)),
        "hidden": int(c["hidden_size"]),
        "inter": int(c["intermediate_size"]),
        "q_heads": heads,
        "kv_heads": int(c.get("num_key_value_heads", heads)),
        "head": int(c.get("head_dim") or int(c["hidden_size"]) // heads),
        "eps": float(c.get("rms_norm_eps", 1e-6)),
        "theta": float(c.get("rope_theta", 10000.0)),
        "qk_norm": bool(c.get("qk_norm", False)),
        "rope_scaling": c.get("rope_scaling"),
        "dtype": c.get("dtype", "bf16"),
    }
    if cfg["dtype"] not in DT:
        raise SystemExit(f"layer_torch: dtype {cfg['dtype']!r} in {path}: expected bf16 or fp16")
    if cfg["q_heads"] % cfg["kv_heads"]:
        raise SystemExit(f"layer_torch: {path}: num_attention_heads is not a multiple of KV heads")
    return cfg


def inv_freq_of(cfg, device):
    d = cfg["head"]
    inv = 1.0 / (cfg["theta"] ** (torch.arange(0, d, 2, dtype=torch.float64, device=device) / d))
    rs = cfg["rope_scaling"]
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        # transformers' _compute_llama3_parameters.
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    return inv


def rms_norm(x, w, eps):
    # transformers' Qwen3RMSNorm / LlamaRMSNorm: fp32 inside, weight applied in the input dtype.
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * xf.to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class DecoderLayer(torch.nn.Module):
    """One decoder layer; its input, RoPE tables and KV cache are buffers, so forward() takes no
    argument and every peer (and CUDA graph) reads the same static tensors."""

    def __init__(self, cfg, args, device):
        super().__init__()
        dt = DT[cfg["dtype"]]
        self.cfg, self.decode = cfg, args.decode
        self.gqa = "enable"
        h, inter, qh, kvh, d = cfg["hidden"], cfg["inter"], cfg["q_heads"], cfg["kv_heads"], cfg["head"]
        self.seq = 1 if args.decode else args.tokens
        self.cache_len = args.kv if args.decode else args.tokens
        torch.manual_seed(args.seed)

        def weight(n, k):  # unit variance out of unit variance in
            w = torch.randn(n, k, device=device, dtype=torch.float32).mul_(1.0 / math.sqrt(k))
            return torch.nn.Parameter(w.to(dt), requires_grad=False)

        def norm_weight(n):
            w = 1.0 + 0.1 * torch.randn(n, device=device, dtype=torch.float32)
            return torch.nn.Parameter(w.to(dt), requires_grad=False)

        self.ln_in, self.ln_post = norm_weight(h), norm_weight(h)
        self.w_qkv = weight((qh + 2 * kvh) * d, h)
        if cfg["qk_norm"]:
            self.q_norm, self.k_norm = norm_weight(d), norm_weight(d)
        self.w_o = weight(h, qh * d)
        self.w_gate_up = weight(2 * inter, h)
        self.w_down = weight(h, inter)
        self.register_buffer("x", torch.randn(args.batch, self.seq, h, device=device).to(dt))
        first = self.cache_len - self.seq  # token s sits at position first + s
        pos = torch.arange(first, first + self.seq, dtype=torch.float64, device=device)
        freqs = pos[:, None] * inv_freq_of(cfg, device)[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos().to(dt))
        self.register_buffer("sin", emb.sin().to(dt))
        if args.decode:
            shape = (args.batch, kvh, self.cache_len, d)
            self.register_buffer("k_cache", torch.randn(shape, device=device).to(dt))
            self.register_buffer("v_cache", torch.randn(shape, device=device).to(dt))

    def forward(self):
        cfg = self.cfg
        qh, kvh, d, eps = cfg["q_heads"], cfg["kv_heads"], cfg["head"], cfg["eps"]
        x = self.x
        b, s, _ = x.shape
        h = rms_norm(x, self.ln_in, eps)
        q, k, v = F.linear(h, self.w_qkv).split([qh * d, kvh * d, kvh * d], dim=-1)
        q, k, v = q.view(b, s, qh, d), k.view(b, s, kvh, d), v.view(b, s, kvh, d)
        if cfg["qk_norm"]:
            q, k = rms_norm(q, self.q_norm, eps), rms_norm(k, self.k_norm, eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        if self.decode:
            # The new token's K/V at the cache's last position (a static cache's index_copy_).
            self.k_cache[:, :, self.cache_len - s:].copy_(k)
            self.v_cache[:, :, self.cache_len - s:].copy_(v)
            k, v = self.k_cache, self.v_cache
        if self.gqa == "repeat" and qh != kvh:
            k, v = k.repeat_interleave(qh // kvh, dim=1), v.repeat_interleave(qh // kvh, dim=1)
        # Decode: one query against every cached position (is_causal would align it top-left).
        o = F.scaled_dot_product_attention(q, k, v, is_causal=not self.decode,
                                           enable_gqa=self.gqa == "enable" and qh != kvh)
        o = o.transpose(1, 2).reshape(b, s, qh * d)
        r = x + F.linear(o, self.w_o)
        h = rms_norm(r, self.ln_post, eps)
        gate, up = F.linear(h, self.w_gate_up).chunk(2, dim=-1)
        return r + F.linear(F.silu(gate) * up, self.w_down)


class PeerTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise PeerTimeout("over --peer-limit-s")


class Harness:
    """The flush, the host-hiding sleep and the timed loop every peer shares."""

    def __init__(self, flush_mib, samples):
        self.samples = samples
        self.flush_buf = (torch.ones(flush_mib * (1 << 20) // 4, dtype=torch.float32, device="cuda")
                          if flush_mib > 0 else None)
        self.sink = torch.empty((), dtype=torch.float32, device="cuda")
        self.sleep_cycles = 0
        try:
            # ~1 ms of GPU sleep, calibrated: longer than any peer's host-side enqueueing.
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1000)
            start.record()
            torch.cuda._sleep(1_000_000)
            stop.record()
            stop.synchronize()
            self.sleep_cycles = int(1_000_000 / max(start.elapsed_time(stop), 1e-3))
        except Exception as e:  # noqa: BLE001 - a private API; timing still works without it
            log(f"layer_torch: no GPU sleep ({e}); host enqueueing may show in direct-call times")

    def flush(self):
        if self.flush_buf is not None:
            torch.sum(self.flush_buf, dim=0, out=self.sink)

    def time(self, run):
        """Median (us), min, max of `samples` timed calls of run(), each after flush + sleep."""
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t_end = time.time() + 0.05
        while time.time() < t_end:
            run()
        torch.cuda.synchronize()
        times = []
        for _ in range(self.samples):
            self.flush()
            if self.sleep_cycles:
                torch.cuda._sleep(self.sleep_cycles)
            start.record()
            run()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1000.0)
        times.sort()
        return times[len(times) // 2], times[0], times[-1]


def graph_of(fn):
    """A CUDA graph of fn() after a warm-up on a side stream, as torch.cuda.graph asks."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g


def cudagraph_skips():
    try:
        from torch._dynamo.utils import counters
        return int(sum(counters["inductor"].get(k, 0) for k in ("cudagraph_skips",)))
    except Exception:  # noqa: BLE001
        return None


def run_peer(name, layer, harness, args, ref):
    """One peer: build, first call (compile_s), timing; a dict for the JSON."""
    out = {"layer_us": None, "compile_s": None, "how_timed": None, "gqa": layer.gqa}
    torch._dynamo.reset()
    if not args.warm_cache:
        # A cache folder of its own per peer: max-autotune does not reuse compile-default's
        # kernels from disk (Inductor and Triton read these each time they open their caches).
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_cache, name)
        os.environ["TRITON_CACHE_DIR"] = os.path.join(_cache, name, "triton")
    skips0 = cudagraph_skips()
    if name == "eager":
        fn = layer
    elif name == "compile":
        fn = torch.compile(layer)
    else:
        fn = torch.compile(layer, mode="max-autotune")
    t0 = time.perf_counter()
    y = fn()
    torch.cuda.synchronize()
    out["compile_s"] = time.perf_counter() - t0
    if args.check and ref is not None:
        diff = (y.float() - ref.float()).abs().max().item()
        out["check"] = {"max_abs_diff": diff, "ref_max_abs": ref.float().abs().max().item(),
                        "finite": bool(torch.isfinite(y).all().item())}
    del y
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    hidden = " (host enqueueing hidden behind a ~1 ms GPU sleep)" if harness.sleep_cycles else ""
    if name == "max-autotune":
        skips = cudagraph_skips()
        if skips is not None and skips0 is not None and skips > skips0:
            out["how_timed"] = ("direct calls: Inductor skipped its CUDA graphs (see stderr), "
                                "kernels launched one by one" + hidden)
        else:
            out["how_timed"] = "direct calls of the compiled module, replaying its own CUDA graphs (cudagraph trees)" + hidden
        mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)

        def run():
            # Each call a new step for the cudagraph trees (this harness keeps no output alive).
            if mark:
                mark()
            fn()
    else:
        try:
            g = graph_of(fn)
            run = g.replay
            out["how_timed"] = "one CUDA graph (torch.cuda.graph) replayed" + hidden
        except Exception as e:  # noqa: BLE001
            why = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            log(f"layer_torch: {name}: capture failed ({why}); timing direct calls")
            torch.cuda.synchronize()
            run = fn
            out["how_timed"] = f"direct calls (CUDA graph capture failed: {why})" + hidden
    med, lo, hi = harness.time(run)
    out.update({"layer_us": med, "min_us": lo, "max_us": hi, "samples": harness.samples})
    return out


def main():
    args = ARGS
    cfg = load_config(args.model)
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    result = {
        "model": cfg["name"], "config": args.model, "mode": "decode" if args.decode else "prefill",
        "batch": args.batch, "tokens": None if args.decode else args.tokens,
        "kv": args.kv if args.decode else None, "dtype": cfg["dtype"],
        "device": props.name, "torch": torch.__version__, "flush_mib": args.flush_mib,
        "samples": args.samples, "cold_cache": not args.warm_cache, "peers": {},
    }
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.no_grad():
        layer = DecoderLayer(cfg, args, dev)
        harness = Harness(args.flush_mib, args.samples)
        ref = None
        if args.gqa == "repeat":
            layer.gqa = "repeat"
        elif args.gqa == "auto":
            try:
                layer()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                log(f"layer_torch: enable_gqa=True fails in eager ({str(e).strip()[:120]}); K/V repeated")
                layer.gqa = "repeat"
        if args.check:
            ref = layer().clone()
            torch.cuda.synchronize()
        base_gqa = layer.gqa
        signal.signal(signal.SIGALRM, _alarm)
        for name in args.peers:
            attempts = [base_gqa]
            if args.gqa == "auto" and base_gqa == "enable":
                attempts.append("repeat")
            res, t_start = None, time.time()
            for gqa in attempts:
                left = args.peer_limit_s - (time.time() - t_start)
                if left < 1:
                    break
                layer.gqa = gqa
                signal.setitimer(signal.ITIMER_REAL, left)
                try:
                    res = run_peer(name, layer, harness, args, ref)
                    break
                except PeerTimeout:
                    res = {"layer_us": None, "compile_s": None, "how_timed": None, "gqa": gqa,
                           "error": f"not finished within --peer-limit-s {args.peer_limit_s:g}"}
                    break
                except Exception as e:  # noqa: BLE001
                    lines = str(e).strip().splitlines()
                    why = f"{type(e).__name__}: {lines[0][:200] if lines else ''}"
                    res = {"layer_us": None, "compile_s": None, "how_timed": None, "gqa": gqa,
                           "error": why}
                    log(f"layer_torch: {name} with gqa={gqa} failed: {why}")
                    traceback.print_exc(limit=4, file=sys.stderr)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                try:
                    torch.cuda.synchronize()
                except Exception:  # noqa: BLE001 - a poisoned context: the next peers fail too
                    pass
            layer.gqa = base_gqa
            result["peers"][name] = res
            if res.get("layer_us") is not None:
                log(f"layer_torch: {name:<12} {res['layer_us']:9.2f} us  (compile {res['compile_s']:.1f} s; "
                    f"{res['how_timed']}; gqa {res['gqa']})"
                    + (f"  check max|diff| {res['check']['max_abs_diff']:.3g} of max|ref| "
                       f"{res['check']['ref_max_abs']:.3g}" if "check" in res else ""))
            else:
                log(f"layer_torch: {name:<12} not measured: {res.get('error')}")
            log("peer-result " + name + " " + json.dumps(res))
    print(json.dumps(result, indent=1), flush=True)


if __name__ == "__main__":
    try:
        main()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    # Inductor's compile workers can hold the interpreter's exit; everything is printed.
    os._exit(0)
