// A decoder layer as an op graph, its structural forks (which ops are fused into one kernel), and
// the lowering of one grouping to kernels: Problems of registered ops (core/op.h), each with the
// structural form of its family it must take. Ops are found by name through an OpLookup (the
// registered ops by default), so a family registered later slots in with no change here, and a
// grouping whose fused form no registered op implements lowers to "unavailable" with the reason,
// never to a stand-in. Pure functions of their arguments: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/op.h"
#include "core/problem.h"
#include "graph/model.h"

namespace attune::graph {

// The forward pass a layer is tuned for: a prefill of `tokens` per sequence, or one decode step
// against a KV cache of depth `kv` (which holds the new token).
struct LayerShape {
  bool decode = false;
  std::int64_t batch = 1;
  std::int64_t tokens = 0;  // prefill: the prompt's tokens per sequence
  std::int64_t kv = 0;      // decode: the cache depth after this step
  std::int64_t seq() const { return decode ? 1 : tokens; }  // new tokens per sequence
  std::int64_t rows() const { return batch * seq(); }       // token rows of the GEMMs
  // "prefill batch=8 tokens=512" or "decode batch=8 kv=2048".
  std::string text() const;
  // One line naming what is wrong with the sizes, or success.
  Status check() const;
};

// One op of the graph: what it computes (`op`, a graph op: rmsnorm, gemm, rope, attention_scores,
// softmax, attention_value, residual_add, silu_mul) on which tensors, with the sizes a kernel of
// it may ask for by name (a registered op's signature names its sizes).
struct Node {
  std::string name;  // its role in the layer: input_norm, qkv_proj, q_norm, rope, o_proj, ...
  std::string op;
  std::vector<std::string> inputs, outputs;
  std::map<std::string, std::int64_t> sizes;
};

struct LayerGraph {
  ModelConfig model;
  std::int64_t layer = 0;
  LayerShape shape;
  std::vector<Node> nodes;  // in execution order
};

// Layer `layer` (0-based) of `model` for `shape`. A layer after the first opens with the residual
// add of the previous layer's MLP output (which the fused form folds into its input RMSNorm);
// the last layer's own MLP residual belongs to the model's final norm, outside every layer.
LayerGraph build_layer(const ModelConfig& model, std::int64_t layer, const LayerShape& shape);

// A structural fork: which ops of the graph are fused into one kernel.
struct Fork {
  std::string name;
  std::vector<std::string> options;
  std::string help;  // what the options mean, in words
};
// The layer's forks (the q/k norm's own option only where the model has the norm).
std::vector<Fork> layer_forks(const ModelConfig& model);

// One endpoint of the forks: fork name -> option.
using Grouping = std::map<std::string, std::string>;
// Every grouping, the product of the forks' options, in a fixed order.
std::vector<Grouping> all_groupings(const std::vector<Fork>& forks);
// "attention=flash,residual=fused,..." (forks in name order).
std::string grouping_text(const Grouping& g);

// Which of a family's structural forms a kernel is: the configs whose knob `knob` takes one of
// `values` (or, with exclude, none of them). Attention's fused and split forms are one op's
// kernel=... knob, so the two groupings share one tuning of the op and read their best apart.
struct Form {
  std::string knob;  // empty: every config of the family
  std::vector<std::string> values;
  bool exclude = false;
  bool any() const { return knob.empty(); }
  bool admits(const Config& config) const;
  std::string text() const;  // "", "kernel=split", "kernel!=split"
};

// One kernel of a lowered grouping: a problem of a registered op (every size, dtype and flag
// written out) in a form, computing the graph nodes it names.
struct Kernel {
  Problem problem;
  Form form;
  std::vector<std::string> nodes;
  std::string note;  // what the slice carries beyond the kernel, when it does (attention)
  // The structural key: a hash of what it computes (the problem's text and the form), never of
  // a node's or a layer's name, so identical kernels of any layer or grouping are one.
  std::string key() const;
};

struct Lowering {
  Grouping grouping;
  std::vector<Kernel> kernels;  // in graph order
  std::string unavailable;      // why no registered op implements this grouping; "": it lowers
  bool available() const { return unavailable.empty(); }
};

using OpLookup = std::function<const OpSignature*(std::string_view)>;

// The kernels of `grouping` on `graph`, each a problem of an op `ops` finds; unavailable (with
// the first reason) when a fused or separate form needs an op, a flag or a size no registered op
// has.
Lowering lower(const LayerGraph& graph, const Grouping& grouping, const OpLookup& ops = find_op);

}  // namespace attune::graph
