// The registration list of the built-in ops: one line per op. NAME is the op's folder under
// src/kernels/ and the stem of what that folder defines: kernels::NAME_op() (its OpSignature, in
// NAME/NAME_op.cpp, core only), kernels::plan_NAME() (its kernel plan, kernels/plan.h) and, with
// CUDA, kernels::make_NAME_family() (its CUDA family). registered_ops() (core/op.h), the kernel
// plans and the CUDA plugin all expand this one list, so an op registered here but missing one of
// them does not link. A header of macros and declarations only: thread-safe.
#pragma once

#include <cstddef>

#include "core/op.h"

#define ATTUNE_KERNEL_OPS(X) \
  X(gemm)                    \
  X(rmsnorm)                 \
  X(attention_decode)        \
  X(attention_prefill)       \
  X(rope)                    \
  X(silu_mul)

namespace attune::kernels {

#define ATTUNE_DECLARE_OP_SIGNATURE(NAME) const OpSignature& NAME##_op();
ATTUNE_KERNEL_OPS(ATTUNE_DECLARE_OP_SIGNATURE)
#undef ATTUNE_DECLARE_OP_SIGNATURE

// The most shared memory any current GPU gives one block (sm_90: 227 KiB): the bound of the ops'
// space constraints and of their plans.
inline constexpr std::size_t kMaxBlockSharedBytes = 227 * 1024;

}  // namespace attune::kernels
