// The registration list of the built-in ops: one line per op. NAME is the op's folder under
// src/kernels/ and the stem of what that folder defines: kernels::NAME_op() (its OpSignature, in
// NAME/NAME_op.cpp, core only), kernels::plan_NAME() (its kernel plan, kernels/plan.h) and, with
// CUDA, kernels::make_NAME_family() (its CUDA family). registered_ops() (core/op.h), the kernel
// plans and the CUDA plugin all expand this one list, so an op registered here but missing one of
// them does not link. A header of macros and declarations only: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/op.h"

#define ATTUNE_KERNEL_OPS(X) \
  X(gemm)                    \
  X(rmsnorm)                 \
  X(attention_decode)        \
  X(attention_prefill)       \
  X(rope)                    \
  X(silu_mul)                \
  X(gemm_rope)

namespace attune::kernels {

#define ATTUNE_DECLARE_OP_SIGNATURE(NAME) const OpSignature& NAME##_op();
ATTUNE_KERNEL_OPS(ATTUNE_DECLARE_OP_SIGNATURE)
#undef ATTUNE_DECLARE_OP_SIGNATURE

// The most shared memory any current GPU gives one block (sm_90: 227 KiB): the bound of the ops'
// space constraints and of their plans.
inline constexpr std::size_t kMaxBlockSharedBytes = 227 * 1024;
// An SM's shared memory (sm_90: 228 KiB), of which each resident block also takes 1 KiB for the
// system: what bounds the blocks that fit on an SM side by side.
inline constexpr std::size_t kSmSharedBytes = 228 * 1024;
inline constexpr std::size_t kBlockReservedSharedBytes = 1024;

// The tiled GEMM's shared memory (defined with gemm's signature, gemm/gemm_op.cpp), which the
// spaces' constraints (gemm's, gemm_rope's) and the plans use: the cp.async ring, the fp32
// partial tile a K split parks in the same memory, and the padded fp32 tile gemm_rope's epilogue
// rotates there; a block takes the largest it uses.
std::int64_t gemm_tiled_ring_bytes(std::int64_t bm, std::int64_t bn, std::int64_t bk,
                                   std::int64_t stages);
std::int64_t gemm_tiled_partial_bytes(std::int64_t bm, std::int64_t bn);
std::int64_t gemm_tiled_rope_tile_bytes(std::int64_t bm, std::int64_t bn);
// The wgmma GEMM's shared memory (defined with gemm's signature): its ring, or the fp32 partial
// tile the ring becomes under a K split, and its mbarriers (gemm_rope's form rotates in registers).
// With tma_store, the staging buffers of the TMA store too, one pair per consumer warpgroup (two
// under pingpong, whatever bm).
std::size_t gemm_wgmma_shared_bytes(std::int64_t bm, std::int64_t bn, std::int64_t stages,
                                    std::int64_t split, bool tma_store, bool pingpong);
// gemm_rope's wgmma form (defined with gemm_rope's signature): the GEMM's, its epilogue's slabs
// where staged (the TMA store's staging size), and with qk_norm the q and k norm weights as fp32
// (2 head floats) after the mbarriers.
std::size_t gemm_wgmma_rope_shared_bytes(std::int64_t bm, std::int64_t bn, std::int64_t stages,
                                         bool staged, bool pingpong, std::int64_t head,
                                         bool qk_norm);

// Space constraints gemm's and gemm_rope's spaces share (defined with gemm's signature). A kernel
// fork's knob: `name` is fixed at `fixed` unless kernel=`kernel`, so each kernel's knobs are free
// only under it. The tiled kernel's: its tl_bm, tl_bn, tl_bk, tl_wm, tl_wn, tl_stages and tl_group
// pinned elsewhere, a block tile under twice the `m` rows, and its warp tiles (multiples of 16 x
// 16, at most 64 x 64 accumulators). The wgmma kernel's (an m x n output): wg_bm, wg_bn,
// wg_stages, wg_tiles, wg_cluster and wg_pingpong pinned elsewhere, a B-sharing cluster only over
// two tile rows, two consumer warpgroups only past 64 rows, ping-pong consumers only on 64-row
// tiles two or more a block, and tiles per block that leave at least two blocks.
Constraint fixed_unless(const char* kernel, const char* name, std::int64_t fixed);
std::vector<Constraint> gemm_tiled_constraints(std::int64_t m);
std::vector<Constraint> gemm_wgmma_constraints(std::int64_t m, std::int64_t n);
// wg_tiles' options in gemm's and gemm_rope's spaces, one tile per block (the baseline) first.
std::vector<Value> gemm_wgmma_tiles_options();
// wg_tiles for an m x n output in 128 x 256 tiles: the fewest tiles per block (of the knob's
// options) that leave at most one wave of blocks on a large GPU (~132 SMs); the first guesses'.
std::int64_t gemm_wgmma_one_wave_tiles(std::int64_t m, std::int64_t n);

// rope's llama3_scaling flag: the rope_scaling of Llama 3.1's config.json (rope_type "llama3"),
// shared by the kernels, the reference and the layer lowering (graph/layer.cpp), which checks that
// a model asks for these values.
// With wavelength w = 2 pi / f of a pair's frequency f and L = original_max_position_embeddings:
// w < L / high_freq_factor keeps f; w > L / low_freq_factor takes f / factor; between, the mix
// (1 - a) f / factor + a f with a = (L / w - low_freq_factor) / (high_freq_factor -
// low_freq_factor).
struct Llama3RopeScaling {
  double factor, low_freq_factor, high_freq_factor;
  std::int64_t original_max_position_embeddings;
};
inline constexpr Llama3RopeScaling kLlama3RopeScaling{8.0, 1.0, 4.0, 8192};

}  // namespace attune::kernels
