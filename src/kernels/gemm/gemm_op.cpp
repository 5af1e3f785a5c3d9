// gemm's signature: C[M,N] = A[M,K] . W[N,K]^T (+ bias[N]). Its baseline is cuBLASLt's heuristic's
// first algorithm, the call most users make.
#include "kernels/ops.h"

namespace attune::kernels {

const OpSignature& gemm_op() {
  static const OpSignature op{.name = "gemm",
                              .sizes = {"m", "n", "k"},
                              .flags = {"bias"},
                              .dtypes = {"bf16", "fp16"},
                              .max_size = 1 << 20,
                              .baseline_config = "kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0",
                              .example_shape = "16x4096x4096",
                              .runtime_key = 0,
                              // A weight matrix is one (n, k): its rows compress to a default
                              // config over the token count m, with exceptions.
                              .sweep_default_per = {"n", "k"}};
  return op;
}

}  // namespace attune::kernels
