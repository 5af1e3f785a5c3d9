#!/usr/bin/env python3
"""Host time of one attune.Runtime.gemm call from Python against the C API's attune_rt_gemm, in one
process, on a hit (issue 21's target: at most 2 us more per call).

    python3 bench/python_dispatch.py [--table T] [--out DIR]

An eager loop of small GEMMs (M=1 and 16, N=K=4096, bf16: the fixture table's rows, rewritten for
this GPU's fingerprint so they hit). Per batch: synchronize, then time `calls` back-to-back calls
on the host (perf_counter around the loop; the GPU runs behind, the launch queue never fills),
divided by `calls`. Batches of the Python loop and of the C loop (Runtime._c_gemm_loop: the same
attune_rt_gemm with the same pointers, from C++) alternate; the medians over batches are compared.
For context, the same through DLPack and __cuda_array_interface__ objects, and torch's own
F.linear.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import attune

ROOT = pathlib.Path(__file__).resolve().parent.parent


def table_for_this_gpu(path):
    """The test fixture's table with this GPU's fingerprint, so its rows hit here."""
    t = json.loads((ROOT / "tests/python/fixtures/h200-table.json").read_text())
    device = json.loads(subprocess.run([attune.find_cli(), "device", "--backend", "cuda", "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    device = device.get("device", device)
    t["device"] = device
    t["device_key"] = device["key"]
    pathlib.Path(path).write_text(json.dumps(t))
    return path


class DLPackOnly:  # an array seen only through DLPack
    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


class InterfaceOnly:  # an array seen only through __cuda_array_interface__ (fp16)
    def __init__(self, t):
        self.__cuda_array_interface__ = t.__cuda_array_interface__


def per_call_us(loop, calls, batches):
    out = []
    for _ in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loop(calls)
        out.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--table", help="default: the fixture's rows for this GPU")
    p.add_argument("--out", default=".")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--batches", type=int, default=60)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    table = args.table or table_for_this_gpu(os.path.join(tempfile.mkdtemp(), "table.json"))
    rt = attune.Runtime(table)
    stream = torch.cuda.Stream()
    s = stream.cuda_stream
    lines = [f"# Python dispatch overhead (bench/python_dispatch.py), {time.strftime('%Y-%m-%d')}",
             "", f"- device: {torch.cuda.get_device_name()}; torch {torch.__version__}; "
             f"Python {sys.version.split()[0]}", f"- command: python3 bench/python_dispatch.py "
             f"--calls {args.calls} --batches {args.batches}", "",
             "| shape | path | host us/call (median of batches) | p10 | p90 | over the C API |",
             "|---|---|---:|---:|---:|---:|"]
    worst = 0.0
    with torch.cuda.stream(stream):
        for m in (1, 16):
            a = torch.randn(m, 4096, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
            out = torch.empty(m, 4096, device="cuda", dtype=torch.bfloat16)
            rt.gemm(a, w, out, stream=s)  # first call: load the row's kernel
            d = rt.last_dispatch()
            assert d["tuned"], f"not a hit: {d['why']}"
            ref = F.linear(a.float(), w.float())
            torch.cuda.synchronize()
            assert torch.allclose(out.float(), ref, rtol=3e-2, atol=3e-2 * ref.abs().max().item())
            args_c = (m, 4096, 4096, 0, a.data_ptr(), w.data_ptr(), out.data_ptr(), s)

            def c_loop(n):
                rt._c_gemm_loop(*args_c, n)

            def py_loop(n):
                g = rt.gemm
                for _ in range(n):
                    g(a, w, out, stream=s)

            da, dw, do = DLPackOnly(a), DLPackOnly(w), DLPackOnly(out)

            def dlpack_loop(n):
                for _ in range(n):
                    rt.gemm(da, dw, do, stream=s)

            def torch_loop(n):
                for _ in range(n):
                    torch.mm(a, w.t(), out=out)

            c, py = [], []
            for _ in range(args.batches):  # alternate, so both see the same conditions
                c += per_call_us(c_loop, args.calls, 1)
                py += per_call_us(py_loop, args.calls, 1)
            extra = {"DLPack objects": per_call_us(dlpack_loop, args.calls, args.batches // 2),
                     "torch.mm (cuBLAS), for context": per_call_us(torch_loop, args.calls,
                                                                  args.batches // 2)}
            ah, wh, oh = (t.half() for t in (a, w, out))
            rt.gemm(ah, wh, oh, stream=s)
            ia, iw, io = InterfaceOnly(ah), InterfaceOnly(wh), InterfaceOnly(oh)

            def cai_loop(n):
                for _ in range(n):
                    rt.gemm(ia, iw, io, stream=s)

            extra["__cuda_array_interface__ objects (fp16, a miss)"] = per_call_us(
                cai_loop, args.calls, args.batches // 2)
            cm, pm = statistics.median(c), statistics.median(py)
            worst = max(worst, pm - cm)

            def q(v, f):
                return statistics.quantiles(v, n=10)[0 if f == 10 else 8]

            shape = f"{m}x4096x4096"
            lines.append(f"| {shape} | C API (attune_rt_gemm in a C++ loop) | {cm:.3f} | "
                         f"{q(c, 10):.3f} | {q(c, 90):.3f} | |")
            lines.append(f"| {shape} | attune.Runtime.gemm (torch tensors) | {pm:.3f} | "
                         f"{q(py, 10):.3f} | {q(py, 90):.3f} | {pm - cm:+.3f} |")
            for name, v in extra.items():
                vm = statistics.median(v)
                lines.append(f"| {shape} | {name} | {vm:.3f} | {q(v, 10):.3f} | {q(v, 90):.3f} | "
                             f"{vm - cm:+.3f} |")
    lines += ["", f"Largest overhead of attune.Runtime.gemm over the C API: {worst:.3f} us per "
              f"call (target: at most 2 us): {'met' if worst <= 2 else 'NOT met'}.",
              f"Counters: {rt.counters()}"]
    text = "\n".join(lines) + "\n"
    print(text)
    pathlib.Path(args.out, "python_dispatch.md").write_text(text)


if __name__ == "__main__":
    main()
