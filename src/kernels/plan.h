// KernelPlan: how one config of a kernel family is compiled and launched, as a pure function of
// (problem, config). The tuner's families and libattune-rt both launch through these functions, so
// the kernel a tuned table's row names is the kernel the runtime runs: the same source, options and
// launch geometry, hence the same cubin (the compile cache key is a hash of them). Host code only,
// no CUDA headers; pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/problem.h"
#include "cuda/nvrtc_build.h"
#include "kernels/ops.h"

namespace attune::kernels {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// A Hopper TMA descriptor a step takes as its argument "tensor_map<i>" (i < kMaxTensorMaps): the
// 16-bit row-major matrix behind pointer argument `arg`, rows x cols (cols contiguous, cols % 8 ==
// 0), copied in boxes of box_rows x box_cols with the 128-byte swizzle, out-of-range elements
// read as zero (a store through it is clipped there). Encoded at every launch from the pointer then
// bound (plan_launch.h).
struct TensorMap2d {
  std::string arg;
  std::uint64_t rows = 0, cols = 0;
  std::uint32_t box_rows = 0, box_cols = 0;
};
inline constexpr std::size_t kMaxTensorMaps = 3;

// One kernel launch of a plan. `args` names the kernel's parameters in order; a launcher binds
// each name to a device pointer or a scalar:
//   gemm:    c, a, b, bias, r (residual=1's addend, C's shape) (device pointers), workspace
//            (device pointer, plan.workspace_bytes), rows (int: m; read by silu_mul's kernel in
//            the split form of gemm silu_mul=1, and by rms_norm=1's row kernel), eps (float:
//            rms_norm=1's epsilon),
//            tensor_map0, tensor_map1, tensor_map2 (the wgmma kernel's maps of a, b and, under
//            wg_tma_store 1, c, by value)
//   rmsnorm: y, h, x, r, w (device pointers), rows (int), eps (float)
//   attention_decode: o, q, k, v, workspace (device pointers), kv (int), rows (int: batch *
//                     q_heads * q_len, the output's rows)
//   attention_prefill: the same names; kv is the sequence (every query token is a key too) and
//                     rows batch * q_heads * seq
//   rope:    q, k, v (outputs: q, the K and V caches), qkv, q_norm, k_norm, workspace (device
//            pointers), rows (int: batch * seq), seq (int), kv (int), eps (float)
//   silu_mul: y (output), x (the gate/up rows, 2 * inter each) (device pointers), rows (int)
//   gemm_rope: rope's q, k, v, q_norm, k_norm, rows, seq, kv, eps; a (x), b (the stacked QKV
//            weight) and workspace (device pointers); tensor_map0, tensor_map1 (the wgmma form's)
struct LaunchStep {
  std::string kernel;  // a name expression of the plan's build
  Dim3 grid, block;
  unsigned shared_bytes = 0;  // dynamic shared memory
  std::vector<std::string> args;
  std::vector<TensorMap2d> tensor_maps;
  // Where the step's "workspace" argument points: this many bytes into the plan's workspace (a
  // chain whose steps pass each other buffers in one workspace).
  std::size_t workspace_offset = 0;
};

// The NVRTC header every plan kernel's source includes, "attune_launch.cuh" (from
// kernels/common/launch.cuh): attune_grid_dependency(), each plan kernel's first call, which makes
// the programmatic dependent launch of plan_launch.cpp safe. Every plan's build lists it.
std::pair<std::string, std::string> launch_header();

struct KernelPlan {
  cuda::BuildRequest build;
  std::vector<LaunchStep> steps;  // enqueued in order on one stream
  std::size_t workspace_bytes = 0;
};

// A cuBLASLt variant: the heuristic's algorithm at `algo_rank` (0 = cuBLASLt's own first choice,
// the baseline), with split-K and tile overrides (0 = the algorithm's own).
struct LtPlan {
  int algo_rank = 0;
  int split_k = 0;
  int tile = 0;
};

// A strided batched matmul by cuBLASLt inside a plan, in row-major terms: for i < batch,
// C_i[m, n] = A_i[m, k] . B_i^T (B_i stored [n, k], b_transposed) or A_i . B_i (B_i stored
// [k, n]), fp32 accumulation; A and B 16-bit, C 16-bit or fp32. Each operand is a named device
// pointer (LaunchStep's names) plus a byte offset, its matrices `stride` elements apart.
struct LtMatmul {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool b_transposed = true;
  bool bf16 = true;     // A's and B's type (and C's unless c_fp32)
  bool c_fp32 = false;  // C in fp32
  struct Operand {
    std::string arg;
    std::size_t offset = 0;
    std::int64_t stride = 0;
  } a, b, c;
  // C += this operand's matrix (cuBLASLt's beta 1, C read from it), [m, n] like C; arg "": none.
  Operand residual;
  // The workspace cuBLASLt may use: bytes at this offset into the plan's workspace.
  std::size_t workspace_offset = 0, workspace_bytes = 0;
};

// The matmul a split form starts with (gemm silu_mul=1's, gemm_rope's): A[m, k] . B[n, k]^T (args
// "a", "b") by cuBLASLt's own algorithm into the plan's workspace at offset 0, 16-bit, then
// cuBLASLt's own workspace behind it; *workspace_bytes receives what the plan's workspace needs.
LtMatmul workspace_product(std::int64_t m, std::int64_t n, std::int64_t k, bool bf16,
                           std::size_t* workspace_bytes);

// A plan of the op's own kernels and cuBLASLt matmuls, enqueued in order on one stream
// (attention_decode's split baseline: scores GEMM, softmax kernel, value GEMM).
using ChainStep = std::variant<LaunchStep, LtMatmul>;
struct ChainPlan {
  cuda::BuildRequest build;  // the kernels its LaunchSteps name
  std::vector<ChainStep> steps;
  std::size_t workspace_bytes = 0;
};

// The RMSNorm step of gemm's and gemm_rope's rms_norm=1 split forms (gemm_plan.cpp), appended to
// p with what its build needs (attune_row_rms.cuh, its row length k; the source includes the
// header, T is the source's): gemm_row_rms scales A's m rows (arg "a", "rows" of them) into the
// plan's workspace at `offset`, where the matmul after it reads them.
void add_row_rms_step(ChainPlan& p, std::int64_t m, std::int64_t k, std::size_t offset);

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool bf16 = true;
  bool bias = false;
  bool silu_mul = false;  // SiLU(gate) * up in the epilogue: C has n / 2 columns (gemm_op.cpp)
  bool rms_norm = false;  // each row of A scaled by its reciprocal RMS (gemm_op.cpp)
  bool residual = false;  // C = ... + R, R (arg r) of C's shape
  std::int64_t out_n() const { return silu_mul ? n / 2 : n; }  // C's columns
};
Result<GemmShape> gemm_shape(const Problem& problem);

// The tiled GEMM's block tile, warps, pipeline depth, K split and rasterization group (gemm's
// tl_* knobs), and its plan (gemm_plan.cpp): gemm_rope's fused kernel is this plan with the RoPE
// epilogue compiled in.
struct TiledTile {
  std::int64_t bm = 128, bn = 128, bk = 32, wm = 2, wn = 2, stages = 3, split = 1, group = 8;
};
// A config's tl_* knobs (tl_split 1 where it has none, as gemm_rope's configs).
Result<TiledTile> tiled_tile(const Config& c);
KernelPlan gemm_tiled_plan(const GemmShape& s, const TiledTile& t);

// The wgmma GEMM's block tile, ring depth, K split and tiles per block (gemm's wg_* knobs), and
// its plan (gemm_plan.cpp): gemm_rope's wgmma kernel is this plan with the RoPE epilogue compiled
// in. tiles > 1 (split 1 only): a block takes that many tiles in turn, the grid a tiles-th of
// them, its ring filling with the next tile while the last is stored. cluster 2 (split 1 only):
// blocks of two consecutive tile rows run as a cluster sharing their B tile by TMA multicast.
// tma_store (gemm's, split 1): C is stored through shared memory by the TMA.
struct WgmmaTile {
  std::int64_t bm = 128, bn = 128, stages = 4, split = 1, tiles = 1, cluster = 1;
  bool tma_store = false;
  bool pingpong = false;  // two consumer warpgroups taking 64-row tiles in turn (wg_pingpong)
};
// A config's wg_* knobs (wg_split, wg_tiles and wg_cluster 1 and wg_tma_store 0 where it has none,
// as gemm_rope's configs had).
Result<WgmmaTile> wgmma_tile(const Config& c);
KernelPlan gemm_wgmma_plan(const GemmShape& s, const WgmmaTile& t);

struct RmsnormShape {
  std::int64_t rows = 0, hidden = 0;
  bool bf16 = true;
  bool residual = false;
};
Result<RmsnormShape> rmsnorm_shape(const Problem& problem);

// rmsnorm's epsilon, shared by the kernel launches and the reference.
inline constexpr double kRmsnormEps = 1e-6;

// attention_decode's sizes (kernels/attention_decode/attention_decode_op.cpp).
struct AttentionDecodeShape {
  std::int64_t batch = 0, kv = 0, head = 0, q_heads = 0, kv_heads = 0, q_len = 0;
  bool bf16 = true;
  std::int64_t group() const { return q_heads / kv_heads; }      // query heads per KV head
  std::int64_t rows() const { return batch * q_heads * q_len; }  // the output's rows
};
Result<AttentionDecodeShape> attention_decode_shape(const Problem& problem);
// kernel=mma's K/V stages per warp, query rows per block (16, one m16 tile, unless q_rows=32:
// two) and dynamic shared memory per block (defined beside the op's space, which bounds them).
unsigned attention_decode_mma_stages(std::int64_t head, std::int64_t kv_tile);
std::int64_t attention_decode_mma_block_rows(std::int64_t q_rows);
std::size_t attention_decode_mma_shared_bytes(std::int64_t head, std::int64_t kv_tile,
                                              std::int64_t warps, std::int64_t block_rows);

// The split form of attention, both attention ops' baseline (defined with attention_decode's
// plans): per (sequence, KV head), S = Q . K^T for the group's `group_rows` query rows (contiguous
// in q) against `keys` keys by a cuBLASLt strided-batched GEMM, the softmax kernel (row r is token
// r % q_len of its query head, which sees keys [0, keys - q_len + r % q_len]), then O = P . V.
struct SplitAttention {
  std::int64_t group_rows = 0, keys = 0, head = 0, batch_heads = 0, rows = 0, q_len = 0;
  bool bf16 = true;
};
ChainPlan split_attention_plan(const SplitAttention& attention);

// attention_prefill's sizes (kernels/attention_prefill/attention_prefill_op.cpp).
struct AttentionPrefillShape {
  std::int64_t seq = 0, batch = 0, head = 0, q_heads = 0, kv_heads = 0;
  bool bf16 = true;
  std::int64_t group() const { return q_heads / kv_heads; }    // query heads per KV head
  std::int64_t rows() const { return batch * q_heads * seq; }  // the output's rows
};
Result<AttentionPrefillShape> attention_prefill_shape(const Problem& problem);
// The wgmma kernel's dynamic shared memory per block, so the space rejects configs over a block's
// limit before any compile.
std::size_t attention_prefill_shared_bytes(std::int64_t head, std::int64_t block_n,
                                           std::int64_t consumers, std::int64_t stages);
// Whether two blocks of one consumer warpgroup fit an SM's shared memory side by side
// (blocks_per_sm=2).
bool attention_prefill_two_blocks_fit(std::int64_t head, std::int64_t block_n, std::int64_t stages);

// rope's sizes (kernels/rope/rope_op.cpp) and its flags.
struct RopeShape {
  std::int64_t batch = 0, seq = 0, kv = 0, q_heads = 0, kv_heads = 0, head = 0, theta = 0;
  bool bf16 = true;
  bool qk_norm = false;
  bool llama3_scaling = false;  // Llama 3.1's frequency rewrite (kLlama3RopeScaling)
  std::int64_t tokens() const { return batch * seq; }            // qkv's rows
  std::int64_t heads() const { return q_heads + 2 * kv_heads; }  // heads per qkv row
};
Result<RopeShape> rope_shape(const Problem& problem);
// The defines rope.cu and the header attune_rope.cuh take from a shape (all but the element type
// T): HEAD, Q_HEADS, KV_HEADS, QK_NORM, LOG2_THETA and, with llama3_scaling, its five.
std::vector<std::string> rope_defines(const RopeShape& s);

// gemm_rope's sizes (kernels/gemm_rope/gemm_rope_op.cpp): rope's, and the projection's K.
struct GemmRopeShape {
  RopeShape rope;
  std::int64_t hidden = 0;
  bool rms_norm = false;  // x's rows scaled by their reciprocal RMS first (gemm's rms_norm=1)
  std::int64_t m() const { return rope.tokens(); }             // x's rows
  std::int64_t n() const { return rope.heads() * rope.head; }  // W's rows (qkv's columns)
};
Result<GemmRopeShape> gemm_rope_shape(const Problem& problem);

// rope's q/k RMSNorm epsilon (Qwen3's), shared by the kernels and the reference.
inline constexpr double kRopeNormEps = 1e-6;

// silu_mul's sizes (kernels/silu_mul/silu_mul_op.cpp).
struct SiluMulShape {
  std::int64_t rows = 0, inter = 0;
  bool bf16 = true;
};
Result<SiluMulShape> silu_mul_shape(const Problem& problem);

// A plan: kernels to compile and launch, (gemm) a cuBLASLt variant, or kernels and cuBLASLt
// matmuls in one chain.
using Plan = std::variant<KernelPlan, LtPlan, ChainPlan>;
using GemmPlan = Plan;

// Each registered op's plan, plan_NAME (kernels/ops.h), defined in its folder
// (kernels/NAME/NAME_plan.cpp).
#define ATTUNE_DECLARE_PLAN(NAME) \
  Result<Plan> plan_##NAME(const Problem& problem, const Config& config);
ATTUNE_KERNEL_OPS(ATTUNE_DECLARE_PLAN)
#undef ATTUNE_DECLARE_PLAN

// Any registered op's plan: what libattune-rt checks a table's rows with and launches. An op
// with no plan is refused, never planned as another op.
Result<Plan> plan(const Problem& problem, const Config& config);

}  // namespace attune::kernels
