"""attune.Runtime: libattune-rt (the C API of include/attune/runtime_c.h) on CUDA arrays."""

from . import _native
from ._errors import error


if _native.has_runtime:

    class Runtime(_native.Runtime):
        """A tuned table opened by libattune-rt for one CUDA device.

        Runtime(table=None, device=-1): `table` is a path (None: no table, every call runs the
        baseline, which ATTUNE_HARVEST records); `device` the CUDA ordinal (-1: $ATTUNE_DEVICE,
        else 0). The table is validated whole and a table tuned for another device is accepted
        with a warning and never used (the fingerprint guard); attune.Error (code "bad_table",
        "cuda", ...) says why an open failed. ATTUNE_LOG_TUNED and ATTUNE_HARVEST are read at open,
        as in C and C++.

        Entry points (each enqueues on `stream` and returns; nothing is synchronized):
            gemm(a, w, out, bias=None, stream=None)        out[..., N] = a[..., K] @ w[N, K].T + bias
            rmsnorm(x, w, out, residual=None, h_out=None, stream=None)
            attention_decode(q, k, v, out, stream=None)    SDPA's layout, causal new tokens
            attention_prefill(q, k, v, out, stream=None)
        Arrays: contiguous CUDA arrays of bfloat16 or float16, as PyTorch tensors (read through
        data_ptr, dtype, shape: a few hundred nanoseconds), or any object with __dlpack__ or
        __cuda_array_interface__ (CuPy, JAX). `stream`: an int (a cudaStream_t, e.g.
        torch.cuda.current_stream().cuda_stream) or a stream object; None: the stream the arrays'
        __cuda_array_interface__ names, else the legacy default stream (PyTorch's default
        stream). Under torch.cuda.graph capture, pass the capturing stream.

        counters(), last_dispatch(), dispatches() (what this object ran, per distinct launch),
        rows() (the table's rows), dispatch_report(), time_problem(problem) (attune verify's
        timing of the public entry point).
        """

        def __init__(self, table=None, device: int = -1):
            super().__init__(table, device)

        def dispatch_report(self) -> dict:
            """The table, the counters, and what each distinct shape ran (row, config, kernels,
            and why: "hit", "miss: no row for this shape", "miss: the table was tuned for another
            device", ...)."""
            report = {"table": self.table or None}
            report.update(self.counters())
            report["dispatches"] = self.dispatches()
            return report

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()
            return False

else:

    class Runtime:
        """libattune-rt was not built (no CUDA toolkit where attune was built)."""

        def __init__(self, table=None, device: int = -1):
            raise error("unsupported", "attune was built without CUDA: libattune-rt (and "
                        "attune.Runtime) need the CUDA toolkit where attune is built")
