#!/usr/bin/env python3
"""Host time of reading one gemm call's arguments in attune._native, without a GPU (issue 21: the
Python binding's overhead over the C API). `_native._decode_gemm(a, w, out, bias=None,
stream=None)` reads and checks its arguments exactly as `Runtime.gemm` does and stops before
attune_rt_gemm; it is called here as bench/python_dispatch.py calls Runtime.gemm (positional
arrays, stream= an int), in a loop of `calls`, median of `batches`.

    PYTHONPATH=build/python python3 bench/python_decode.py [--calls N] [--batches B]

Arrays: objects exposing a dict __cuda_array_interface__ (fp16, 1x4096 . 4096x4096), and, when
PyTorch is importable, CPU tensors of a torch.Tensor subclass that says is_cuda=True (torch
function dispatch disabled, as nn.Parameter does), so the decoder reads them as it reads CUDA
tensors; no memory is touched. Method lookup and `self` aside, this is the binding's part of
bench/python_dispatch.py's "over the C API".

Instruction counts, steadier than wall time on a shared machine: `--loop cai|torch` makes `--calls`
calls of one kind and prints nothing; run it under cachegrind with N calls and with 0, and divide
the difference by N:

    PYTHONPATH=build/python valgrind --tool=cachegrind --cache-sim=no \
        --cachegrind-out-file=/dev/null python3 bench/python_decode.py --loop cai --calls 20000
"""

import argparse
import statistics
import sys
import time

from attune import _native


class InterfaceOnly:  # an array seen only through __cuda_array_interface__
    def __init__(self, shape, ptr, typestr="<f2"):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": None, "version": 3}


def per_call_ns(fn, args, kwargs, calls, batches):
    out = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn(*args, **kwargs)
        out.append((time.perf_counter_ns() - t0) / calls)
    return statistics.median(out), statistics.quantiles(out, n=10)[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--loop", choices=("cai", "torch"), help="only `calls` calls of one kind")
    args = p.parse_args()
    decode = _native._decode_gemm
    stream = 0x1234500
    cases = {"cai": (
        InterfaceOnly((1, 4096), 0x7f0000000000), InterfaceOnly((4096, 4096), 0x7f0010000000),
        InterfaceOnly((1, 4096), 0x7f0020000000))}
    try:
        import torch

        class FakeCuda(torch.Tensor):  # a CPU tensor the decoder takes for a CUDA one
            is_cuda = True
            __torch_function__ = torch._C._disabled_torch_function_impl

        def t(*shape):
            return torch.empty(*shape, dtype=torch.bfloat16).as_subclass(FakeCuda)

        cases["torch"] = (t(1, 4096), t(4096, 4096), t(1, 4096))
    except ImportError:
        print("(no torch: the torch path is left out)", file=sys.stderr)
    if args.loop:
        arrays = cases[args.loop]
        decode(*arrays, stream=stream)
        for _ in range(args.calls):
            decode(*arrays, stream=stream)
        return
    names = {"cai": "__cuda_array_interface__ objects (fp16)",
             "torch": f"torch tensors (bf16, torch {torch.__version__})" if "torch" in cases else ""}
    print(f"Python {sys.version.split()[0]}; {args.batches} batches of {args.calls} calls")
    print("| arrays | ns per _decode_gemm(a, w, out, stream=s) (median of batches) | p10 |")
    print("|---|---:|---:|")
    for name, arrays in cases.items():
        decode(*arrays, stream=stream)  # raises if the decoder refuses them
        med, low = per_call_ns(decode, arrays, {"stream": stream}, args.calls, args.batches)
        print(f"| {names[name]} | {med:.0f} | {low:.0f} |")


if __name__ == "__main__":
    main()
