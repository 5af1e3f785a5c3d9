"""bench/sdpa_timing: what the attention benches share: PyTorch's SDPA backends timed the way
attune's deploy regime times (a CUDA graph of one call replayed after an L2 flush by reads, CUDA
events, median of many samples), imported by bench/attention_decode.py and
bench/attention_prefill.py.
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


def deploy_us(fn, samples=200):
    """Median of `samples` single replays of a CUDA graph of fn(), each after an L2 flush."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()  # warm-up outside the graph (workspace allocation, autotuning)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t_end = time.time() + 0.02
    while time.time() < t_end:
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        flush()
        start.record()
        g.replay()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)
    times.sort()
    return times[len(times) // 2]


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
