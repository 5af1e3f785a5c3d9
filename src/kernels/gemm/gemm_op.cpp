// gemm's signature: C[M,N] = A[M,K] . W[N,K]^T (+ bias[N]). Its baseline is cuBLASLt's heuristic's
// first algorithm, the call most users make.
//
// silu_mul=1 is the gated MLP's gate/up projection with SiLU * mul in its epilogue: W is the
// gate's rows then the up's (N = 2 x the intermediate size, the stacked gate_up_proj weight as
// it is stored), and C[M, N/2] = silu(A . gate^T) * (A . up^T). Its cuBLASLt baseline is the
// split form a user without the fusion runs: the matmul, then a SiLU * mul kernel.
//
// rms_norm=1 folds an RMSNorm of A into the GEMM: C = diag(r) A . W^T with r[i] = 1 / sqrt(mean_k
// A[i,k]^2 + eps) (eps the RMSNorm kernels' 1e-6), the norm's weight folded into W's columns once
// when the weights are loaded (W[n, k] g[k]). attune's wgmma kernel takes each row's sum of squares
// from the A tiles it already holds (the diagonal of A A^T, on the tensor cores) and scales its
// accumulators in the epilogue, so the norm costs no kernel and no pass over A; the cuBLASLt form
// is the split one, an RMSNorm kernel without weight into a workspace, then the matmul. residual=1
// adds a matrix R of C's shape (the residual stream: C = x + A . W^T), in attune's epilogues and as
// cuBLASLt's beta = 1. A decoder layer with both (graph/layer.cpp, norm=gemm) runs no RMSNorm
// kernel at all.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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
                                    std::int64_t split, bool tma_store, bool pingpong) {
  // 1024 bytes of slack to align the ring, the ring (or the fp32 partial tile it becomes under a
  // K split, whichever is larger), the TMA store's two 64 x 64 16-bit staging buffers per
  // consumer warpgroup, then a full and an empty mbarrier per stage.
  const std::int64_t ring = stages * (bm + bn) * 128;
  const std::int64_t partial = split > 1 ? bm * bn * 4 : 0;
  const std::int64_t consumers = pingpong ? 2 : bm / 64;
  const std::int64_t staging = tma_store ? consumers * 2 * 64 * 128 : 0;
  return static_cast<std::size_t>(1024 + std::max(ring, partial) + staging + 16 * stages);
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

std::vector<Constraint> gemm_wgmma_constraints(std::int64_t m, std::int64_t n) {
  return {fixed_unless("wgmma", "wg_bm", 128),
          fixed_unless("wgmma", "wg_bn", 128),
          fixed_unless("wgmma", "wg_stages", 4),
          fixed_unless("wgmma", "wg_tiles", 1),
          fixed_unless("wgmma", "wg_cluster", 1),
          fixed_unless("wgmma", "wg_pingpong", 0),
          {"kernel=wgmma: ping-pong consumers (wg_pingpong 1) take 64-row tiles (wg_bm 64), two "
           "or more a block (wg_tiles >= 2: one takes a tile while the other stores the last)",
           {"wg_bm", "wg_tiles", "wg_pingpong"},
           [](const Assignment& a) {
             return a.i("wg_pingpong") == 0 || (a.i("wg_bm") == 64 && a.i("wg_tiles") >= 2);
           }},
          {"kernel=wgmma: a B-sharing cluster (wg_cluster 2) needs two tile rows (M past wg_bm)",
           {"kernel", "wg_bm", "wg_cluster"},
           [m](const Assignment& a) {
             return a["kernel"].as_word() != "wgmma" || a.i("wg_cluster") == 1 || m > a.i("wg_bm");
           }},
          {"kernel=wgmma: two consumer warpgroups (wg_bm 128) only where M exceeds one's 64 rows",
           {"kernel", "wg_bm"},
           [m](const Assignment& a) {
             return a["kernel"].as_word() != "wgmma" || a.i("wg_bm") == 64 || m > 64;
           }},
          {"kernel=wgmma: wg_tiles tiles per block leave at least two blocks",
           {"kernel", "wg_bm", "wg_bn", "wg_tiles"},
           [m, n](const Assignment& a) {
             const std::int64_t t = a.i("wg_tiles");
             return a["kernel"].as_word() != "wgmma" || t == 1 ||
                    ((m + a.i("wg_bm") - 1) / a.i("wg_bm")) *
                            ((n + a.i("wg_bn") - 1) / a.i("wg_bn")) >=
                        2 * t;
           }}};
}

std::vector<Value> gemm_wgmma_tiles_options() {
  return {1, 2, 3, 4, 6, 8};
}

std::int64_t gemm_wgmma_one_wave_tiles(std::int64_t m, std::int64_t n) {
  const std::int64_t tiles = (m + 127) / 128 * ((n + 255) / 256);
  const std::vector<Value> options = gemm_wgmma_tiles_options();
  for (const Value& t : options)
    if ((tiles + t.as_int() - 1) / t.as_int() <= 132) return t.as_int();
  return options.back().as_int();
}

namespace {

Status check_gemm(const Problem& p) {
  if (p.flag("rms_norm") && p.flag("bias"))
    return Error::invalid_argument(p.text() +
                                   ": rms_norm=1 takes no bias (the row scale would scale it)");
  if (p.flag("residual") && p.flag("silu_mul"))
    return Error::invalid_argument(
        p.text() + ": residual=1 adds to a projection's output, not to SiLU * mul's");
  if (!p.flag("silu_mul")) return Status::success();
  if (*p.int_attr("n") % 2 != 0)
    return Error::invalid_argument(p.text() +
                                   ": silu_mul=1 needs an even n (the gate's rows, then the up's)");
  if (p.flag("bias")) return Error::invalid_argument(p.text() + ": silu_mul=1 takes no bias");
  return Status::success();
}

constexpr std::int64_t kSkinnyMaxM = 16;

Knob knob(const char* n, std::vector<Value> o, std::size_t base = 0,
          KnobKind kind = KnobKind::kInPlace) {
  return Knob{n, std::move(o), base, kind};
}

// The kernel fork first: each kernel's knobs are free only under it, fixed elsewhere (at the
// baseline's values, so a knob a row leaves out means what it meant before the knob existed).
// lt_algo is a rank in cuBLASLt's heuristic's list for the shape, not an algorithm id: its options
// are the same on every device, and a rank the device's list lacks is refused when it runs.
Result<Space> gemm_space(const Problem& p) {
  ATTUNE_ASSIGN(const std::int64_t m, p.int_attr("m"));
  ATTUNE_ASSIGN(const std::int64_t n, p.int_attr("n"));
  ATTUNE_ASSIGN(const std::int64_t k, p.int_attr("k"));
  const bool silu = p.flag("silu_mul"), rms = p.flag("rms_norm"), residual = p.flag("residual");
  // Under silu_mul=1 each output column takes two accumulators (gate and up).
  const std::int64_t acc_per_out = silu ? 2 : 1;
  std::vector<Constraint> constraints{
      fixed_unless("cublaslt", "lt_algo", 0),
      fixed_unless("cublaslt", "lt_split", 0),
      fixed_unless("cublaslt", "lt_tile", 0),
      {"silu_mul=1's and rms_norm=1's cuBLASLt forms (the matmul between kernels of their own) "
       "run cuBLASLt's own algorithm",
       {"lt_algo", "lt_split", "lt_tile"},
       [silu, rms](const Assignment& a) {
         return !(silu || rms) ||
                (a.i("lt_algo") == 0 && a.i("lt_split") == 0 && a.i("lt_tile") == 0);
       }},
      {"rms_norm=1 and residual=1 are cuBLASLt's and the wgmma kernel's (the skinny and tiled "
       "kernels have neither)",
       {"kernel"},
       [rms, residual](const Assignment& a) {
         const std::string k = a["kernel"].as_word();
         return !(rms || residual) || k == "cublaslt" || k == "wgmma";
       }},
      {"the tiled kernel's SiLU * mul epilogue needs N % 16 == 0",
       {"kernel"},
       [silu, n](const Assignment& a) {
         return !silu || a["kernel"].as_word() != "tiled" || n % 16 == 0;
       }},
      {fmt::format("the skinny kernel is for M <= {}", kSkinnyMaxM),
       {"kernel"},
       [m](const Assignment& a) { return a["kernel"].as_word() != "skinny" || m <= kSkinnyMaxM; }},
      fixed_unless("skinny", "sk_warps", 4),
      fixed_unless("skinny", "sk_nb", 2),
      fixed_unless("skinny", "sk_vec", 8),
      fixed_unless("skinny", "sk_unroll", 1),
      fixed_unless("skinny", "sk_split", 1),
      {"skinny accumulators fit in registers: M * sk_nb (twice that under silu_mul) <= 64",
       {"kernel", "sk_nb"},
       [m, acc_per_out](const Assignment& a) {
         return a["kernel"].as_word() != "skinny" || m * a.i("sk_nb") * acc_per_out <= 64;
       }},
      {"sk_vec divides K",
       {"kernel", "sk_vec"},
       [k](const Assignment& a) {
         return a["kernel"].as_word() != "skinny" || k % a.i("sk_vec") == 0;
       }},
      {fmt::format("the tensor-core skinny kernel is for M <= {} and K % 8 == 0", kSkinnyMaxM),
       {"kernel"},
       [m, k](const Assignment& a) {
         return a["kernel"].as_word() != "skinny_tc" || (m <= kSkinnyMaxM && k % 8 == 0);
       }},
      fixed_unless("skinny_tc", "tc_warps", 4),
      fixed_unless("skinny_tc", "tc_nt", 1),
      fixed_unless("skinny_tc", "tc_unroll", 1),
      fixed_unless("skinny_tc", "tc_split", 1),
      // A K split spreads few rows over more SMs; past one load per thread it only adds idle
      // blocks.
      {"a skinny K split leaves every thread at least one load",
       {"kernel", "sk_warps", "sk_vec", "sk_split"},
       [k](const Assignment& a) {
         return a["kernel"].as_word() != "skinny" || a.i("sk_split") == 1 ||
                k / (a.i("sk_vec") * a.i("sk_split")) >= a.i("sk_warps") * 32;
       }},
      {"a skinny_tc K split leaves every warp at least one 32-wide chunk",
       {"kernel", "tc_warps", "tc_split"},
       [k](const Assignment& a) {
         return a["kernel"].as_word() != "skinny_tc" || a.i("tc_split") == 1 ||
                (k + 31) / 32 / a.i("tc_split") >= a.i("tc_warps");
       }},
      {"the tiled kernel needs K % 8 == 0 (16-byte loads)", {"kernel"}, [k](const Assignment& a) {
         return a["kernel"].as_word() != "tiled" || k % 8 == 0;
       }}};
  for (Constraint& c : gemm_tiled_constraints(m)) constraints.push_back(std::move(c));
  constraints.insert(
      constraints.end(),
      {fixed_unless("tiled", "tl_split", 1),
       {"the pipeline fits the most shared memory any current GPU gives a block (227 KiB)",
        {"kernel", "tl_bm", "tl_bn", "tl_bk", "tl_stages"},
        [](const Assignment& a) {
          return a["kernel"].as_word() != "tiled" ||
                 gemm_tiled_ring_bytes(a.i("tl_bm"), a.i("tl_bn"), a.i("tl_bk"),
                                       a.i("tl_stages")) <=
                     static_cast<std::int64_t>(kMaxBlockSharedBytes);
        }},
       {"a K split's partial tile (fp32) fits the same 227 KiB",
        {"kernel", "tl_bm", "tl_bn", "tl_split"},
        [](const Assignment& a) {
          return a["kernel"].as_word() != "tiled" || a.i("tl_split") == 1 ||
                 gemm_tiled_partial_bytes(a.i("tl_bm"), a.i("tl_bn")) <=
                     static_cast<std::int64_t>(kMaxBlockSharedBytes);
        }},
       {"split-K leaves every split at least two K tiles",
        {"kernel", "tl_bk", "tl_split"},
        [k](const Assignment& a) {
          return a["kernel"].as_word() != "tiled" || a.i("tl_split") == 1 ||
                 (k + a.i("tl_bk") - 1) / a.i("tl_bk") >= 2 * a.i("tl_split");
        }},
       {"the wgmma kernel needs K % 8 == 0 (the TMA reads rows 16-byte aligned)",
        {"kernel"},
        [k](const Assignment& a) { return a["kernel"].as_word() != "wgmma" || k % 8 == 0; }},
       {"the wgmma kernel's SiLU * mul epilogue needs N % 16 == 0",
        {"kernel"},
        [silu, n](const Assignment& a) {
          return !silu || a["kernel"].as_word() != "wgmma" || n % 16 == 0;
        }}});
  for (Constraint& c : gemm_wgmma_constraints(m, n)) constraints.push_back(std::move(c));
  constraints.insert(
      constraints.end(),
      {fixed_unless("wgmma", "wg_split", 1),
       {"a wgmma K split takes one tile per block (wg_tiles 1)",
        {"wg_split", "wg_tiles"},
        [](const Assignment& a) { return a.i("wg_split") == 1 || a.i("wg_tiles") == 1; }},
       {"a wgmma K split takes no ping-pong consumers (wg_pingpong 0)",
        {"wg_split", "wg_pingpong"},
        [](const Assignment& a) { return a.i("wg_split") == 1 || a.i("wg_pingpong") == 0; }},
       {"a wgmma K split's cluster is its split: wg_cluster 1",
        {"wg_split", "wg_cluster"},
        [](const Assignment& a) { return a.i("wg_split") == 1 || a.i("wg_cluster") == 1; }},
       fixed_unless("wgmma", "wg_tma_store", 0),
       {"the wgmma TMA store (wg_tma_store 1) takes no K split, tiles of 64-column multiples of "
        "output and output rows of 16-byte multiples",
        {"wg_bn", "wg_split", "wg_tma_store"},
        [silu, n](const Assignment& a) {
          return a.i("wg_tma_store") == 0 ||
                 (a.i("wg_split") == 1 && (silu ? a.i("wg_bn") / 2 : a.i("wg_bn")) % 64 == 0 &&
                  (silu ? n / 2 : n) % 8 == 0);
        }},
       {"the wgmma ring (or a K split's fp32 partial tile) and the TMA store's staging fit a "
        "block's 227 KiB",
        {"kernel", "wg_bm", "wg_bn", "wg_stages", "wg_split", "wg_tma_store", "wg_pingpong"},
        [](const Assignment& a) {
          return a["kernel"].as_word() != "wgmma" ||
                 gemm_wgmma_shared_bytes(a.i("wg_bm"), a.i("wg_bn"), a.i("wg_stages"),
                                         a.i("wg_split"), a.i("wg_tma_store") == 1,
                                         a.i("wg_pingpong") == 1) <= kMaxBlockSharedBytes;
        }},
       {"rms_norm=1's wgmma kernel sums each row's squares over the whole of K: no K split",
        {"kernel", "wg_split"},
        [rms](const Assignment& a) {
          return !rms || a["kernel"].as_word() != "wgmma" || a.i("wg_split") == 1;
        }},
       {"a wgmma K split leaves every split at least two 64-wide K tiles",
        {"kernel", "wg_split"},
        [k](const Assignment& a) {
          return a["kernel"].as_word() != "wgmma" || a.i("wg_split") == 1 ||
                 (k + 63) / 64 >= 2 * a.i("wg_split");
        }}});
  return Space::make({knob("kernel", {"cublaslt", "skinny", "skinny_tc", "tiled", "wgmma"}, 0,
                           KnobKind::kStructural),
                      knob("lt_algo", {0, 1, 2, 3, 4, 5, 6, 7}),
                      knob("lt_split", {0, 2, 4, 8, 16}),
                      knob("lt_tile", {0, 1, 2, 3, 4}),
                      knob("sk_warps", {4, 1, 2, 8}),
                      knob("sk_nb", {2, 1, 4, 8}),
                      knob("sk_vec", {8, 4, 2, 1}),
                      knob("sk_unroll", {1, 2, 4}),
                      knob("sk_split", {1, 2, 4, 8}),
                      knob("tc_warps", {4, 1, 2, 8}),
                      knob("tc_nt", {1, 2, 4}),
                      knob("tc_unroll", {1, 2, 4}),
                      knob("tc_split", {1, 2, 4, 8}),
                      knob("tl_bm", {128, 64, 32, 16, 256}),
                      knob("tl_bn", {128, 64, 256, 32}),
                      knob("tl_bk", {32, 64}),
                      knob("tl_wm", {2, 1, 4}),
                      knob("tl_wn", {2, 1, 4}),
                      knob("tl_stages", {3, 2, 4, 5}),
                      knob("tl_split", {1, 2, 4, 8}),
                      knob("tl_group", {8, 1, 4, 16}),
                      knob("wg_bm", {128, 64}),
                      knob("wg_bn", {128, 64, 256}),
                      knob("wg_stages", {4, 3, 5, 6, 8}),
                      knob("wg_split", {1, 2, 4, 8}),
                      knob("wg_tiles", gemm_wgmma_tiles_options()),
                      knob("wg_cluster", {1, 2}),
                      knob("wg_tma_store", {0, 1}),
                      knob("wg_pingpong", {0, 1})},
                     std::move(constraints));
}

// A, W and C once (C is N/2 wide under silu_mul), the bias; 2 M N K.
OpWork gemm_work(const Problem& p) {
  const double m = static_cast<double>(*p.int_attr("m")), n = static_cast<double>(*p.int_attr("n")),
               k = static_cast<double>(*p.int_attr("k"));
  const double out_n = p.flag("silu_mul") ? n / 2 : n;
  const double elems =
      m * k + n * k + m * out_n * (p.flag("residual") ? 2 : 1) + (p.flag("bias") ? n : 0);
  return OpWork{2 * elems, 2 * m * n * k};
}

// With few rows the weights' read is all a GEMM does, and it is done by few blocks: at 128 rows
// on an H100 (bench/results/gemm-few-rows-h100-2026-12-07.md) every tile shape was fastest at the
// deepest ring that fits (8 stages: 64 x 64 tiles 4.35 us with the L2 warm at 128 x 4096 x 1024,
// against 4.60 at four; the SiLU * mul form at n 6144 7.09 us in the deploy regime against
// cuBLASLt and the SiLU kernel's 8.99), and a K split paid where it brought the blocks to about 64
// and lost past it (64 x 128 tiles at 128 x 1024 x 2048: 16 tiles took 7.72 us unsplit, 5.48 at
// split 4 (64 blocks), 9.44 at split 8; 64 x 64 tiles at 128 x 4096 x 1024: 4.35 unsplit (128
// blocks), 9.81 at split 2). So each tile shape at its deepest ring, with the largest split up to
// 4 that keeps its blocks at or under 64 and every split two K tiles, storing through the TMA
// where the output allows it.
std::vector<std::string> gemm_few_rows_seeds(std::int64_t m, std::int64_t n, std::int64_t k,
                                             bool silu, bool rms) {
  std::vector<std::string> out;
  const std::int64_t out_n = silu ? n / 2 : n, k_tiles = (k + 63) / 64;
  for (const auto& [bm, bn] :
       {std::pair<std::int64_t, std::int64_t>{64, 128}, {64, 64}, {128, 64}}) {
    const std::int64_t tiles = (m + bm - 1) / bm * ((n + bn - 1) / bn);
    std::int64_t split = 1;
    for (std::int64_t s : {2, 4})
      if (!rms && tiles * s <= 64 && k_tiles >= 2 * s) split = s;
    const bool tma_store = split == 1 && (silu ? bn / 2 : bn) % 64 == 0 && out_n % 8 == 0;
    for (std::int64_t stages : {8, 6, 5, 4})
      if (gemm_wgmma_shared_bytes(bm, bn, stages, split, tma_store, false) <=
          kMaxBlockSharedBytes) {
        out.push_back(fmt::format("kernel=wgmma,wg_bm={},wg_bn={},wg_stages={},wg_split={}{}", bm,
                                  bn, stages, split, tma_store ? ",wg_tma_store=1" : ""));
        break;
      }
  }
  return out;
}

// First guesses (OpSignature::seed_configs): cuBLASLt's other heuristic ranks, ahead of the
// search. They cost a measurement and no compile (a few tens of ms each, where a candidate of
// attune's own kernels waits for NVRTC), and a tuned rank other than cuBLASLt's first is often the
// fastest config: a 44 s layer tune on the H200 kept ranks 5, 1, 4 and 2 for the four GEMMs at
// 8 x 512 tokens and 3 and 2 at 1 x 128 (bench/results/layer-h200-2026-12-04f.md), while a 20 s
// one, which reached no rank past the first in the search's own order, kept rank 0 for all four
// (layer-h200-2026-12-05b.md). silu_mul=1's cuBLASLt form runs the first rank alone.
// Where M spans two or more 128-row tiles, then the wgmma kernel at 128 x 256 tiles and four-stage
// rings, with the fewest tiles per block that leave one wave of blocks on a large GPU (~132 SMs),
// storing C through the TMA (where the output's rows allow it) and straight: on an H100 at 4096 x
// 4096 x 1024 the TMA-stored form at four tiles per block took 50.7 us against cuBLASLt's 50.4
// and, under silu_mul at n = 6144, the straight form at six 86.4 us against cuBLASLt and the SiLU
// kernel's 99.1 (bench/results/wgmma-store-h100-2026-12-05.md); a search reaches them late (they
// are a few of the space's thousands of configs) and each costs an NVRTC compile.
// Between the skinny kernels' 16 rows and 256, the wgmma kernel instead (gemm_few_rows_seeds).
std::vector<std::string> gemm_seeds(const Problem& p) {
  std::vector<std::string> out;
  const bool silu = p.flag("silu_mul"), rms = p.flag("rms_norm");
  if (!silu && !rms)
    for (int rank = 1; rank < 8; ++rank)
      out.push_back(fmt::format("kernel=cublaslt,lt_algo={}", rank));
  const std::int64_t m = *p.int_attr("m"), n = *p.int_attr("n");
  if (m < 256) {
    if (m > kSkinnyMaxM)
      for (std::string& s : gemm_few_rows_seeds(m, n, *p.int_attr("k"), silu, rms))
        out.push_back(std::move(s));
    return out;
  }
  const std::string wgmma = fmt::format("kernel=wgmma,wg_bm=128,wg_bn=256,wg_stages=4,wg_tiles={}",
                                        gemm_wgmma_one_wave_tiles(m, n));
  if ((silu ? n / 2 : n) % 8 == 0) out.push_back(wgmma + ",wg_tma_store=1");
  out.push_back(wgmma);
  return out;
}

}  // namespace

const OpSignature& gemm_op() {
  static const OpSignature op{.name = "gemm",
                              .sizes = {"m", "n", "k"},
                              .flags = {"bias"},
                              .optional_flags = {"silu_mul", "rms_norm", "residual"},
                              .dtypes = {"bf16", "fp16"},
                              .max_size = 1 << 20,
                              .baseline_config = "kernel=cublaslt,lt_algo=0,lt_split=0,lt_tile=0",
                              .example_shape = "16x4096x4096",
                              .runtime_key = 0,
                              // A weight matrix is one (n, k): its rows compress to a default
                              // config over the token count m, with exceptions.
                              .sweep_default_per = {"n", "k"},
                              .check = &check_gemm,
                              .space = &gemm_space,
                              .work = &gemm_work,
                              .seed_configs = &gemm_seeds};
  return op;
}

}  // namespace attune::kernels
