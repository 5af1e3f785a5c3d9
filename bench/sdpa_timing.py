"""bench/sdpa_timing: what the attention benches share: PyTorch's SDPA backends timed the way
attune's deploy regime times (what one call adds to a CUDA graph behind another kernel, replayed
after an L2 flush by reads, CUDA events, median of many samples), imported by
bench/attention_decode.py and bench/attention_prefill.py.
"""
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa

BACKENDS = [("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
            ("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)]
DT = {"bf16": torch.bfloat16, "fp16": torch.float16}

dev = torch.device("cuda")
props = torch.cuda.get_device_properties(dev)
# Twice the L2 read between samples, as attune's read flush does (src/cuda/cuda_run.cpp).
flush_buf = torch.ones(max(2 * getattr(props, "L2_cache_size", 50 << 20), 64 << 20) // 4,
                       dtype=torch.float32, device=dev)
flush_sink = torch.empty((), dtype=torch.float32, device=dev)


def flush():
    torch.sum(flush_buf, dim=0, out=flush_sink)


# The lead: a kernel next to nothing, which every timed graph starts with (attune's is an empty
# kernel, src/cuda/cuda_run.cpp).
lead_buf = torch.zeros(1, dtype=torch.float32, device=dev)


def lead():
    lead_buf.add_(0.0)


def _replay_us(g, start, stop):
    flush()
    start.record()
    g.replay()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1000.0


def deploy_us(fn, samples=200):
    """What fn() adds to a CUDA graph behind another kernel, L2 cold, as attune's deploy regime
    times it: per sample, a graph of the lead alone and then a graph of the lead and fn(), each
    replayed after an L2 flush; the median of the second less the median of the first."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()  # warm-up outside the graph (workspace allocation, autotuning)
            lead()
    torch.cuda.current_stream().wait_stream(s)
    g_lead, g = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(g_lead):
        lead()
    with torch.cuda.graph(g):
        lead()
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t_end = time.time() + 0.02
    while time.time() < t_end:
        g.replay()
        g_lead.replay()
    torch.cuda.synchronize()
    alone, led = [], []
    for _ in range(samples):
        alone.append(_replay_us(g_lead, start, stop))
        led.append(_replay_us(g, start, stop))
    alone.sort()
    led.sort()
    return max(led[len(led) // 2] - alone[len(alone) // 2], 0.01)


def every_backend(dtype, batch, q_heads, kv_heads, q_len, kv_len, head, samples=200, skip=None,
                  **kwargs):
    """Each backend of BACKENDS on sdpa(q, k, v, **kwargs) with random (seed 0) q [batch, q_heads,
    q_len, head] and K/V [batch, kv_heads, kv_len, head]: ({name: (us, note)} as sdpa_us gives it,
    a backend named in `skip` given (None, its reason) unrun; the fastest backend's name, None when
    none ran)."""
    skip = skip or {}
    torch.manual_seed(0)
    q = torch.randn(batch, q_heads, q_len, head, dtype=DT[dtype], device=dev)
    k = torch.randn(batch, kv_heads, kv_len, head, dtype=DT[dtype], device=dev)
    v = torch.randn(batch, kv_heads, kv_len, head, dtype=DT[dtype], device=dev)
    sd = {name: (None, skip[name]) if name in skip else sdpa_us(b, q, k, v, samples, **kwargs)
          for name, b in BACKENDS}
    del q, k, v
    torch.cuda.empty_cache()
    timed = {n: u for n, (u, _) in sd.items() if u is not None}
    return sd, (min(timed, key=timed.get) if timed else None)


def sdpa_us(backend, q, k, v, samples=200, **kwargs):
    """(us, note) of one backend on sdpa(q, k, v, **kwargs), or (None, why) when it refuses.

    GQA: first with enable_gqa=True on K/V of their own heads; a backend that refuses gets K/V
    expanded to q's heads beforehand (outside the timing), noted "(rep)".
    """
    group = q.shape[1] // k.shape[1]
    attempts = [("", k, v, True)]
    if group > 1:
        attempts.append(("(rep)", k.repeat_interleave(group, dim=1),
                         v.repeat_interleave(group, dim=1), False))
    why = ""
    for note, kk, vv, gqa in attempts:
        def fn():
            with sdpa_kernel([backend]):
                return sdpa(q, kk, vv, enable_gqa=gqa, **kwargs)
        try:
            fn()
            torch.cuda.synchronize()
            return deploy_us(fn, samples), note
        except Exception as e:  # a backend refusing the cell (or GQA) raises
            why = str(e).strip().splitlines()[0][:80] if str(e).strip() else type(e).__name__
            torch.cuda.synchronize()
    return None, why
