# attune.Runtime on a GPU with PyTorch tensors (ctest python_gpu_test, label gpu): results against
# torch.matmul and PyTorch's own ops, a call captured in a CUDA graph, the fingerprint guard, the
# counters, ATTUNE_LOG_TUNED and ATTUNE_HARVEST, and arrays seen only through DLPack or
# __cuda_array_interface__ (CuPy where installed).
import json
import os
import pathlib
import subprocess

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device for PyTorch", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import attune  # noqa: E402

FIXTURE = pathlib.Path(__file__).resolve().parents[2] / "python" / "fixtures" / "h200-table.json"


@pytest.fixture(scope="module")
def here_table(tmp_path_factory):
    """The fixture table with this GPU's fingerprint: its rows apply here."""
    t = json.loads(FIXTURE.read_text())
    device = json.loads(subprocess.run([attune.find_cli(), "device", "--backend", "cuda", "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    t["device"], t["device_key"] = device, device["key"]
    path = tmp_path_factory.mktemp("table") / "here.json"
    path.write_text(json.dumps(t))
    return str(path)


def close(out, ref, dtype):
    tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
    err = ((out.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6)).item()
    assert err < tol, f"max error {err} relative to the largest reference value"


def rand(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device="cuda", dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("m,n,k", [(1, 4096, 4096), (16, 4096, 4096), (5, 1000, 328), (64, 4096, 4096)])
def test_gemm_matches_torch_matmul(here_table, dtype, m, n, k):
    rt = attune.Runtime(here_table)
    a, w = rand(m, k, dtype=dtype), rand(n, k, dtype=dtype)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    rt.gemm(a, w, out)
    torch.cuda.synchronize()
    close(out, torch.matmul(a.float(), w.float().t()), dtype)
    d = rt.last_dispatch()
    assert d["problem"] == f"gemm:bias=0,dtype={'bf16' if dtype == torch.bfloat16 else 'fp16'},k={k},m={m},n={n}"
    # The fixture's rows: bf16 m=1, 16, 64 exact; fp16 m in [1, 64] bucketed, at n = k = 4096.
    assert d["tuned"] == (n == 4096), d["why"]


def test_gemm_bias_leading_dims_and_streams(here_table):
    rt = attune.Runtime(here_table)
    a, w, bias = rand(2, 3, 256), rand(512, 256), rand(512)
    out = torch.empty(2, 3, 512, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        rt.gemm(a, w, out, bias=bias, stream=torch.cuda.current_stream().cuda_stream)
    s.synchronize()
    close(out, F.linear(a.float(), w.float(), bias.float()), torch.bfloat16)
    rt.gemm(a, w, out, bias, s)  # a torch.cuda.Stream object as the stream
    s.synchronize()
    close(out, F.linear(a.float(), w.float(), bias.float()), torch.bfloat16)


def test_refusals_are_errors_not_crashes(here_table):
    rt = attune.Runtime(here_table)
    a, w = rand(4, 64), rand(32, 64)
    with pytest.raises(ValueError, match="do not fit"):
        rt.gemm(a, w, torch.empty(4, 33, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="CUDA"):
        rt.gemm(a.cpu(), w, torch.empty(4, 32, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="bfloat16 or float16"):
        rt.gemm(a.float(), w.float(), torch.empty(4, 32, device="cuda"))
    with pytest.raises(ValueError, match="contiguous"):
        rt.gemm(rand(64, 4).t(), w, torch.empty(4, 32, device="cuda", dtype=torch.bfloat16))
    misaligned = rand(4 * 64 + 1)[1:].view(4, 64)  # contiguous, 2 bytes past an aligned address
    with pytest.raises(attune.Error) as e:  # the library's own check
        rt.gemm(misaligned, w, torch.empty(4, 32, device="cuda", dtype=torch.bfloat16))
    assert e.value.code == "invalid_argument" and "aligned" in str(e.value)


def test_graph_captured_call(here_table):
    rt = attune.Runtime(here_table)
    a, w = rand(16, 4096), rand(4096, 4096)
    out = torch.empty(16, 4096, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        rt.gemm(a, w, out, stream=s.cuda_stream)  # the first call loads the kernel, not capturable
    s.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        rt.gemm(a, w, out, stream=torch.cuda.current_stream().cuda_stream)
    for _ in range(2):
        a.copy_(rand(16, 4096))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        close(out, torch.matmul(a.float(), w.float().t()), torch.bfloat16)
    assert rt.last_dispatch()["tuned"]


def test_rmsnorm_matches_torch(here_table):
    rt = attune.Runtime(here_table)
    x, r, w = rand(16, 4096), rand(16, 4096), rand(4096)
    y, h = torch.empty_like(x), torch.empty_like(x)
    rt.rmsnorm(x, w, y, residual=r, h_out=h)
    torch.cuda.synchronize()
    href = x.float() + r.float()
    close(h, href, torch.bfloat16)
    close(y, F.rms_norm(href, (4096,), w.float(), 1e-6), torch.bfloat16)
    assert rt.last_dispatch()["tuned"]  # the fixture's rmsnorm row, rows=16


def test_attention_decode_matches_sdpa(here_table):
    rt = attune.Runtime(here_table)
    q, k, v = rand(2, 8, 1, 128), rand(2, 2, 512, 128), rand(2, 2, 512, 128)
    o = torch.empty_like(q)
    rt.attention_decode(q, k, v, o)
    torch.cuda.synchronize()
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
    close(o, ref, torch.bfloat16)


def test_attention_prefill_matches_sdpa(here_table):
    rt = attune.Runtime(here_table)
    q, k, v = rand(1, 4, 256, 64), rand(1, 2, 256, 64), rand(1, 2, 256, 64)
    o = torch.empty_like(q)
    rt.attention_prefill(q, k, v, o)
    torch.cuda.synchronize()
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True,
                                         enable_gqa=True)
    close(o, ref, torch.bfloat16)


def test_guard_counters_and_report():
    rt = attune.Runtime(str(FIXTURE))  # tuned for a fingerprint that is not this GPU's
    a, w = rand(1, 4096), rand(4096, 4096)
    out = torch.empty(1, 4096, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        rt.gemm(a, w, out)
    report = rt.dispatch_report()
    assert report["device_mismatch"] and (report["hits"], report["misses"]) == (0, 3)
    (d,) = report["dispatches"]
    assert not d["tuned"] and d["why"] == "miss: the table was tuned for another device"
    torch.cuda.synchronize()
    close(out, torch.matmul(a.float(), w.float().t()), torch.bfloat16)  # the baseline ran


def test_log_tuned_and_harvest(tmp_path, here_table, monkeypatch, capfd):
    harvest = tmp_path / "shapes.txt"
    monkeypatch.setenv("ATTUNE_HARVEST", str(harvest))
    monkeypatch.setenv("ATTUNE_LOG_TUNED", "1")
    rt = attune.Runtime(here_table)
    out = torch.empty(1, 4096, device="cuda", dtype=torch.bfloat16)
    rt.gemm(rand(1, 4096), rand(4096, 4096), out)  # a row
    small = torch.empty(3, 96, device="cuda", dtype=torch.bfloat16)
    for _ in range(2):
        rt.gemm(rand(3, 64), rand(96, 64), small)  # a miss, harvested once
    rt.close()
    err = capfd.readouterr().err
    assert "attune-rt: hit gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096" in err
    assert "attune-rt: miss gemm:bias=0,dtype=bf16,k=64,m=3,n=96" in err
    assert "attune-rt: 1 hits, 2 misses over 2 distinct shapes" in err
    assert harvest.read_text().splitlines() == ["gemm:bias=0,dtype=bf16,k=64,m=3,n=96"]


class DLPackOnly:
    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


class InterfaceOnly:
    def __init__(self, t):
        self.__cuda_array_interface__ = t.__cuda_array_interface__


def test_dlpack_and_array_interface(here_table):
    rt = attune.Runtime(here_table)
    a, w = rand(16, 4096), rand(4096, 4096)
    out = torch.empty(16, 4096, device="cuda", dtype=torch.bfloat16)
    rt.gemm(DLPackOnly(a), DLPackOnly(w), DLPackOnly(out))  # bf16 through DLPack
    torch.cuda.synchronize()
    close(out, torch.matmul(a.float(), w.float().t()), torch.bfloat16)
    ah, wh = a.half(), w.half()
    oh = torch.empty(16, 4096, device="cuda", dtype=torch.float16)
    rt.gemm(InterfaceOnly(ah), InterfaceOnly(wh), InterfaceOnly(oh))  # fp16 through the interface
    torch.cuda.synchronize()
    close(oh, torch.matmul(ah.float(), wh.float().t()), torch.float16)


def test_cupy_arrays(here_table):
    cupy = pytest.importorskip("cupy")
    rt = attune.Runtime(here_table)
    a = cupy.random.standard_normal((8, 512)).astype(cupy.float16)
    w = cupy.random.standard_normal((256, 512)).astype(cupy.float16)
    out = cupy.empty((8, 256), dtype=cupy.float16)
    rt.gemm(a, w, out, stream=cupy.cuda.get_current_stream())
    cupy.cuda.get_current_stream().synchronize()
    ref = a.astype(cupy.float32) @ w.astype(cupy.float32).T
    err = float(cupy.abs(out.astype(cupy.float32) - ref).max() / cupy.abs(ref).max())
    assert err < 5e-3
