// gemm's signature: C[M,N] = A[M,K] . W[N,K]^T (+ bias[N]). Its baseline is cuBLASLt's heuristic's
// first algorithm, the call most users make.
//
// silu_mul=1 is the gated MLP's gate/up projection with SiLU * mul in its epilogue: W is the
// gate's rows then the up's (N = 2 x the intermediate size, the stacked gate_up_proj weight as
// it is stored), and C[M, N/2] = silu(A . gate^T) * (A . up^T). Its cuBLASLt baseline is the
// split form a user without the fusion runs: the matmul, then a SiLU * mul kernel.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "kernels/ops.h"

namespace attune::kernels {

// The tiled kernel's shared memory (declared in kernels/plan.h; defined with the op, core only,
// so gemm's CUDA family, gemm_rope's space and the plans share one formula).
std::int64_t gemm_tiled_ring_bytes(std::int64_t bm, std::int64_t bn, std::int64_t bk,
                                   std::int64_t stages) {
  return stages * (bm + bn) * bk * 2;  // an A and a B tile of 16-bit elements per stage
}

std::int64_t gemm_tiled_partial_bytes(std::int64_t bm, std::int64_t bn) {
  return bm * bn * 4;
}

std::int64_t gemm_tiled_rope_tile_bytes(std::int64_t bm, std::int64_t bn) {
  return bm * (bn + 4) * 4;  // fp32 rows padded by 4 floats (16 bytes) against bank conflicts
}

std::size_t gemm_wgmma_shared_bytes(std::int64_t bm, std::int64_t bn, std::int64_t stages,
                                    std::int64_t split) {
  // 1024 bytes of slack to align the ring, the ring (or the fp32 partial tile it becomes under a
  // K split, whichever is larger), then a full and an empty mbarrier per stage.
  const std::int64_t ring = stages * (bm + bn) * 128;
  const std::int64_t partial = split > 1 ? bm * bn * 4 : 0;
  return static_cast<std::size_t>(1024 + std::max(ring, partial) + 16 * stages);
}

Constraint fixed_unless(const char* kernel, const char* name, std::int64_t fixed) {
  return Constraint{fmt::format("{} is fixed unless kernel={}", name, kernel),
                    {"kernel", name},
                    [kernel, name, fixed](const Assignment& a) {
                      return a["kernel"].as_word() == kernel || a.i(name) == fixed;
                    }};
}

std::vector<Constraint> gemm_tiled_constraints(std::int64_t m) {
  auto tiled = [](const Assignment& a) { return a["kernel"].as_word() == "tiled"; };
  return {fixed_unless("tiled", "tl_bm", 128),
          fixed_unless("tiled", "tl_bn", 128),
          fixed_unless("tiled", "tl_bk", 32),
          fixed_unless("tiled", "tl_wm", 2),
          fixed_unless("tiled", "tl_wn", 2),
          fixed_unless("tiled", "tl_stages", 3),
          fixed_unless("tiled", "tl_group", 8),
          {"kernel=tiled: a block tile under twice M (taller only multiplies zero rows)",
           {"kernel", "tl_bm"},
           [tiled, m](const Assignment& a) {
             return !tiled(a) || a.i("tl_bm") < 2 * std::max<std::int64_t>(m, 16);
           }},
          {"kernel=tiled: warp tiles are multiples of 16 x 16",
           {"kernel", "tl_bm", "tl_bn", "tl_wm", "tl_wn"},
           [tiled](const Assignment& a) {
             return !tiled(a) ||
                    ((a.i("tl_bm") / a.i("tl_wm")) % 16 == 0 && a.i("tl_bm") >= 16 * a.i("tl_wm") &&
                     (a.i("tl_bn") / a.i("tl_wn")) % 16 == 0 && a.i("tl_bn") >= 16 * a.i("tl_wn"));
           }},
          {"kernel=tiled: a warp's accumulators fit in registers: warp tile <= 64 x 64",
           {"kernel", "tl_bm", "tl_bn", "tl_wm", "tl_wn"},
           [tiled](const Assignment& a) {
             return !tiled(a) ||
                    (a.i("tl_bm") / a.i("tl_wm")) * (a.i("tl_bn") / a.i("tl_wn")) <= 64 * 64;
           }}};
}

std::vector<Constraint> gemm_wgmma_constraints(std::int64_t m) {
  return {fixed_unless("wgmma", "wg_bm", 128),
          fixed_unless("wgmma", "wg_bn", 128),
          fixed_unless("wgmma", "wg_stages", 4),
          {"kernel=wgmma: two consumer warpgroups (wg_bm 128) only where M exceeds one's 64 rows",
           {"kernel", "wg_bm"},
           [m](const Assignment& a) {
             return a["kernel"].as_word() != "wgmma" || a.i("wg_bm") == 64 || m > 64;
           }}};
}

namespace {

Status check_gemm(const Problem& p) {
  if (!p.flag("silu_mul")) return Status::success();
  if (*p.int_attr("n") % 2 != 0)
    return Error::invalid_argument(p.text() +
                                   ": silu_mul=1 needs an even n (the gate's rows, then the up's)");
  if (p.flag("bias")) return Error::invalid_argument(p.text() + ": silu_mul=1 takes no bias");
  return Status::success();
}

// A, W and C once (C is N/2 wide under silu_mul), the bias; 2 M N K.
OpWork gemm_work(const Problem& p) {
  const double m = static_cast<double>(*p.int_attr("m")), n = static_cast<double>(*p.int_attr("n")),
               k = static_cast<double>(*p.int_attr("k"));
  const double out_n = p.flag("silu_mul") ? n / 2 : n;
  const double elems = m * k + n * k + m * out_n + (p.flag("bias") ? n : 0);
  return OpWork{2 * elems, 2 * m * n * k};
}

}  // namespace

const OpSignature& gemm_op() {
  static const OpSignature op{.name = "gemm",
                              .sizes = {"m", "n", "k"},
                              .flags = {"bias"},
                              .optional_flags = {"silu_mul"},
                              .dtypes = {"bf16", "fp16"},
                              .max_size = 1 << 20,
                              .baseline_config = "kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0",
                              .example_shape = "16x4096x4096",
                              .runtime_key = 0,
                              // A weight matrix is one (n, k): its rows compress to a default
                              // config over the token count m, with exceptions.
                              .sweep_default_per = {"n", "k"},
                              .check = &check_gemm,
                              .work = &gemm_work};
  return op;
}

}  // namespace attune::kernels
