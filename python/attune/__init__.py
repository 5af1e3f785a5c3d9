"""attune from Python: dispatch a tuned table's kernels on your tensors, read a tuning database,
run a tune.

    rt = attune.Runtime("tuned/nvidia-h200-sm_90a-132sm.json")   # libattune-rt
    rt.gemm(x, w, out, stream=torch.cuda.current_stream().cuda_stream)
    attune.Table("tuned/....json").lookup("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096")  # no GPU
    attune.Database("attune.db").best()                          # the store, read only
    attune.tune(backend="sim", problem="rmsnorm")                # the report `attune tune --json` prints

No framework is imported: arrays are read through PyTorch's tensor methods, DLPack or
__cuda_array_interface__ (see Runtime).
"""

from ._native import Error
from ._database import Best, Database, Measurement, Problem
from ._runtime import Runtime
from ._table import Table
from ._tune import find_cli, tune

__all__ = ["Best", "Database", "Error", "Measurement", "Problem", "Runtime", "Table", "find_cli",
           "tune"]
