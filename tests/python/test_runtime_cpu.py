# attune.Runtime where there is no GPU: the open fails with one attune.Error saying why (CI's
# machines have no driver); what it does on a GPU is tests/gpu/python/test_runtime_torch.py.
import pytest

import attune


def test_runtime_without_a_gpu_says_why(table_path):
    if not attune._native.has_runtime:
        with pytest.raises(attune.Error) as e:
            attune.Runtime(table_path)
        assert e.value.code == "unsupported"
        return
    try:
        rt = attune.Runtime(table_path)
    except attune.Error as e:
        assert e.code in ("cuda", "unsupported"), e.code
        assert "CUDA" in str(e) or "driver" in str(e), str(e)
        return
    rt.close()
    pytest.skip("a GPU answered: tests/gpu/python covers the runtime there")
