// The assembled layer: the kernels of one grouping of a model layer (src/graph), each a problem of
// a registered op with the config its inner search chose and its role in the layer, written as
// one problem of the op "layer". It is what `attune tune --model` runs as one CUDA graph to check
// the sum of isolated kernel times against the whole; as a problem it is measured, stored and
// answered from the store like any other, so an identical re-run times nothing. Not in the
// registration list (kernels/ops.h): no shape syntax, no table rows, no search; its space holds
// one config. Pure functions: thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/problem.h"
#include "core/space.h"

namespace attune {

inline constexpr const char* kLayerOp = "layer";

// One kernel of the layer, in execution order. role: the graph node it starts with (input_norm,
// input_residual, qkv_proj, q_norm, k_norm, rope, attention_scores, o_proj, attention_residual,
// post_attention_norm, gate_up_proj, silu_mul, down_proj), which says what its inputs and
// outputs are.
struct LayerStep {
  std::string role;
  Problem problem;
  Config config;
};

// The problem of running `steps` in order (attributes sNN.role, sNN.problem, sNN.config; commas
// of the problem and config texts written as ';'). invalid_argument for no step or a text that
// holds ';' already.
Result<Problem> layer_problem(const std::vector<LayerStep>& steps);
// The steps of a layer problem, in order; invalid_argument naming what is malformed.
Result<std::vector<LayerStep>> layer_steps(const Problem& problem);
// Its space: one knob, run=graph (the steps run as one CUDA graph), the only config.
Result<Space> layer_space();

}  // namespace attune
