# How attune.Runtime's entry points read their arguments, without a GPU: _native._decode_gemm
# reads and checks them exactly as Runtime.gemm does (the same parameter parser and array readers)
# and stops before the launch. Runtime on real tensors: tests/gpu/python/test_runtime_torch.py.
import inspect

import pytest

import attune
from attune import _native

pytestmark = pytest.mark.skipif(not _native.has_runtime, reason="built without libattune-rt")


class Interface:  # an array seen only through __cuda_array_interface__
    def __init__(self, shape, typestr="<f2", strides=None, ptr=0x7F0000000000, **extra):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (ptr, False), "strides": strides, "version": 3,
                                         **extra}


class TorchLike:  # what the decoder reads of a PyTorch tensor, in plain Python
    class DType:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return self.name

    BF16 = DType("torch.bfloat16")

    def __init__(self, shape, dtype=BF16, is_cuda=True, contiguous=True, ptr=0x7F0000000000):
        self.shape, self._dtype, self._is_cuda = tuple(shape), dtype, is_cuda
        self._contiguous, self._ptr = contiguous, ptr

    # Properties and methods of the type, as torch.Tensor has them (the decoder asks the type).
    dtype = property(lambda self: self._dtype)
    is_cuda = property(lambda self: self._is_cuda)

    def is_contiguous(self):
        return self._contiguous

    def data_ptr(self):
        return self._ptr


def gemm_arrays(kind=Interface):
    return kind((2, 64)), kind((32, 64)), kind((2, 32))


def test_entry_points_have_signatures():
    sig = {name: list(inspect.signature(getattr(attune.Runtime, name)).parameters)
           for name in ("gemm", "rmsnorm", "attention_decode", "attention_prefill")}
    assert sig["gemm"] == ["self", "a", "w", "out", "bias", "stream"]
    assert sig["rmsnorm"] == ["self", "x", "w", "out", "residual", "h_out", "stream"]
    assert sig["attention_decode"] == ["self", "q", "k", "v", "out", "stream"]
    assert sig["attention_prefill"] == ["self", "q", "k", "v", "out", "stream"]


def test_a_well_formed_call_passes():
    a, w, out = gemm_arrays()
    assert _native._decode_gemm(a, w, out) is None
    assert _native._decode_gemm(a, w, out, None, 0x1234) is None
    assert _native._decode_gemm(a, w, out, Interface((32,)), stream=7) is None
    a, w, out = gemm_arrays(TorchLike)
    assert _native._decode_gemm(a, w, out, stream=7) is None


def test_bad_calls_are_refused_as_python_refuses_them():
    a, w, out = gemm_arrays()
    with pytest.raises(TypeError, match=r"_decode_gemm\(\) takes at most 5 arguments \(6 given\)"):
        _native._decode_gemm(a, w, out, None, None, None)
    with pytest.raises(TypeError, match="missing required argument 'out'"):
        _native._decode_gemm(a, w)
    with pytest.raises(TypeError, match="missing required argument 'a'"):
        _native._decode_gemm(w=w, out=out)
    with pytest.raises(TypeError, match="multiple values for argument 'w'"):
        _native._decode_gemm(a, w, out, w=w)
    with pytest.raises(TypeError, match="unexpected keyword argument 'streams'"):
        _native._decode_gemm(a, w, out, streams=1)


def test_keywords_reach_their_parameters():
    a, w, out = gemm_arrays()
    # Keyword names built at run time are not interned: matched by value.
    names = {"".join(["o", "ut"]): out, "".join(["a"]): a, "".join(["w"]): w}
    assert _native._decode_gemm(**names) is None
    assert _native._decode_gemm(out=out, w=w, a=a, bias=Interface((32,)), stream=3) is None
    # Swapped by keyword, the shapes no longer fit: the names were not read positionally.
    with pytest.raises(ValueError, match="do not fit"):
        _native._decode_gemm(out=a, w=w, a=out)
    with pytest.raises(ValueError, match="bias"):
        _native._decode_gemm(a, w, out, bias=Interface((31,)))
    with pytest.raises(TypeError, match="stream: expected None, an int"):
        _native._decode_gemm(a, w, out, stream=1.5)


def test_interface_arrays_are_checked():
    a, w, out = gemm_arrays()
    with pytest.raises(ValueError, match="bfloat16 or float16, got <f4"):
        _native._decode_gemm(Interface((2, 64), "<f4"), w, out)
    with pytest.raises(ValueError, match="w: the array must be C-contiguous"):
        _native._decode_gemm(a, Interface((32, 64), strides=(2, 64)), out)
    assert _native._decode_gemm(a, Interface((32, 64), strides=(128, 2)), out) is None
    with pytest.raises(TypeError, match="lacks shape, typestr or data"):
        bad = Interface((2, 32))
        del bad.__cuda_array_interface__["data"]
        _native._decode_gemm(a, w, bad)
    with pytest.raises(UnicodeEncodeError):  # a type string with no UTF-8 form
        _native._decode_gemm(Interface((2, 64), "<f\ud800"), w, out)


def test_torch_like_arrays_are_checked():
    a, w, out = gemm_arrays(TorchLike)
    with pytest.raises(ValueError, match="out: a CUDA tensor is needed"):
        _native._decode_gemm(a, w, TorchLike((2, 32), is_cuda=False))
    with pytest.raises(ValueError, match="w: the tensor must be contiguous"):
        _native._decode_gemm(a, TorchLike((32, 64), contiguous=False), out)
    with pytest.raises(ValueError, match="bfloat16 or float16, got torch.float32"):
        _native._decode_gemm(TorchLike((2, 64), TorchLike.DType("torch.float32")), w, out)
    with pytest.raises(ValueError, match="do not fit"):
        _native._decode_gemm(a, TorchLike((32, 63)), out)
