#include "graph/layer.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "core/hash.h"
#include "kernels/ops.h"

namespace attune::graph {

std::string LayerShape::text() const {
  return decode ? fmt::format("decode batch={} kv={}", batch, kv)
                : fmt::format("prefill batch={} tokens={}", batch, tokens);
}

Status LayerShape::check() const {
  if (batch <= 0) return Error::invalid_argument("--batch must be a positive count of sequences");
  if (decode) {
    if (tokens != 0)
      return Error::invalid_argument(
          "--tokens is the prompt of a prefill; a decode step takes --kv (the cache depth)");
    if (kv <= 0)
      return Error::invalid_argument("--decode needs --kv L, the cache depth after the step (> 0)");
  } else {
    if (kv != 0) return Error::invalid_argument("--kv is the cache depth of --decode");
    if (tokens <= 0)
      return Error::invalid_argument(
          "a prefill needs --tokens T (> 0), the prompt's tokens per sequence; or --decode --kv L");
  }
  return Status::success();
}

namespace {

using Sizes = std::map<std::string, std::int64_t>;

// The sizes every node may be asked for by a kernel's signature, by the names the ops use.
Sizes layer_sizes(const ModelConfig& m, const LayerShape& s) {
  return {{"batch", s.batch},
          {"seq", s.seq()},
          {"q_len", s.seq()},
          {"kv", s.decode ? s.kv : s.tokens},
          {"tokens", s.rows()},
          {"head", m.head_dim},
          {"q_heads", m.num_attention_heads},
          {"kv_heads", m.num_key_value_heads},
          {"hidden", m.hidden_size},
          // RoPE's base, an integer in every release (Llama 3: 500000, Qwen3: 1000000).
          {"theta", static_cast<std::int64_t>(m.rope_theta)},
          {"inter", m.intermediate_size}};
}

Sizes with(Sizes base, const Sizes& more) {
  for (const auto& [k, v] : more) base[k] = v;
  return base;
}

}  // namespace

LayerGraph build_layer(const ModelConfig& m, std::int64_t layer, const LayerShape& s) {
  LayerGraph g{m, layer, s, {}};
  const Sizes base = layer_sizes(m, s);
  const std::int64_t rows = s.rows(), hidden = m.hidden_size, head = m.head_dim,
                     qh = m.num_attention_heads, kvh = m.num_key_value_heads,
                     inter = m.intermediate_size;
  auto node = [&](std::string name, std::string op, std::vector<std::string> in,
                  std::vector<std::string> out, const Sizes& sizes = {}) {
    g.nodes.push_back(
        Node{std::move(name), std::move(op), std::move(in), std::move(out), with(base, sizes)});
  };
  auto gemm = [&](std::string name, std::string in, std::string out, std::int64_t n,
                  std::int64_t k) {
    node(std::move(name), "gemm", {std::move(in)}, {std::move(out)},
         {{"m", rows}, {"n", n}, {"k", k}});
  };
  const Sizes norm = {{"rows", rows}, {"hidden", hidden}};
  if (layer > 0)
    node("input_residual", "residual_add", {"x", "mlp_out"}, {"x"}, norm);  // previous layer's
  node("input_norm", "rmsnorm", {"x"}, {"xn"}, norm);
  gemm("qkv_proj", "xn", "qkv", (qh + 2 * kvh) * head, hidden);
  if (m.qk_norm) {
    node("q_norm", "rmsnorm", {"qkv"}, {"qkv"}, {{"rows", rows * qh}, {"hidden", head}});
    node("k_norm", "rmsnorm", {"qkv"}, {"qkv"}, {{"rows", rows * kvh}, {"hidden", head}});
  }
  node("rope", "rope", {"qkv"}, {"q", "k_cache", "v_cache"});
  node("attention_scores", "attention_scores", {"q", "k_cache"}, {"scores"});
  node("attention_softmax", "softmax", {"scores"}, {"probs"});
  node("attention_value", "attention_value", {"probs", "v_cache"}, {"attn"});
  gemm("o_proj", "attn", "o", hidden, qh * head);
  node("attention_residual", "residual_add", {"x", "o"}, {"x"}, norm);
  node("post_attention_norm", "rmsnorm", {"x"}, {"xn2"}, norm);
  gemm("gate_up_proj", "xn2", "gate_up", 2 * inter, hidden);
  node("silu_mul", "silu_mul", {"gate_up"}, {"act"}, {{"rows", rows}});
  gemm("down_proj", "act", "mlp_out", hidden, inter);
  return g;
}

std::vector<Fork> layer_forks(const ModelConfig& m) {
  std::vector<Fork> forks;
  forks.push_back({"residual",
                   {"fused", "separate"},
                   "fused: each residual add folded into the RMSNorm after it; separate: the add "
                   "as its own kernel"});
  if (m.qk_norm)
    forks.push_back({"rope",
                     {"kernel", "separate", "epilogue"},
                     "kernel: one RoPE kernel with the per-head q/k RMSNorm inside; separate: "
                     "q/k RMSNorm kernels, then RoPE; epilogue: both in the QKV GEMM's epilogue"});
  else
    forks.push_back({"rope",
                     {"kernel", "epilogue"},
                     "kernel: a RoPE kernel; epilogue: RoPE in the QKV GEMM's epilogue"});
  forks.push_back({"silu_mul",
                   {"kernel", "epilogue"},
                   "kernel: SiLU(gate) * up as its own kernel; epilogue: in the gate/up GEMM's "
                   "epilogue"});
  forks.push_back({"attention",
                   {"flash", "split"},
                   "flash: scores, softmax and values in one fused kernel; split: a scores GEMM, a "
                   "softmax kernel and a value GEMM"});
  forks.push_back({"norm",
                   {"kernel", "gemm"},
                   "kernel: each RMSNorm its own kernel; gemm: folded into the GEMM after it (the "
                   "GEMM scales each row by its reciprocal RMS, the norm's weight folded into the "
                   "GEMM's weights), its residual add (residual=fused) in the epilogue of the GEMM "
                   "before it"});
  return forks;
}

std::vector<Grouping> all_groupings(const std::vector<Fork>& forks) {
  std::vector<Grouping> out{Grouping{}};
  for (const Fork& f : forks) {
    std::vector<Grouping> next;
    for (const Grouping& g : out)
      for (const std::string& o : f.options) {
        Grouping h = g;
        h[f.name] = o;
        next.push_back(std::move(h));
      }
    out = std::move(next);
  }
  return out;
}

std::string grouping_text(const Grouping& g) {
  std::string out;
  for (const auto& [fork, option] : g) out += (out.empty() ? "" : ",") + fork + "=" + option;
  return out;
}

bool Form::admits(const Config& config) const {
  if (any()) return true;
  const Value* v = config.get(knob);
  if (!v) return false;
  const bool in = std::find(values.begin(), values.end(), v->text()) != values.end();
  return in != exclude;
}

std::string Form::text() const {
  if (any()) return "";
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : "|") + v;
  return knob + (exclude ? "!=" : "=") + out;
}

std::string Kernel::key() const {
  return hex64(fnv1a64(problem.text() + "|" + form.text()));
}

namespace {

// The ops, flags and forms that implement each grouping's kernels: the one place that names
// them. An op or flag not registered makes the groupings that need it unavailable.
constexpr const char* kAddOp = "add";    // a residual add alone
constexpr const char* kRopeOp = "rope";  // RoPE, optionally with the q/k norm inside
constexpr const char* kRopeNormFlag = "qk_norm";
// RoPE with Llama 3.1's frequency rewrite (rope_scaling, rope_type llama3): a rope op without it
// computes another function, so a model with it needs the flag (and the values the flag means).
constexpr const char* kRopeScalingFlag = "llama3_scaling";
constexpr const char* kSiluMulOp = "silu_mul";  // SiLU(gate) * up
// The QKV GEMM with RoPE (and the q/k norm, by rope's flags) in its epilogue.
constexpr const char* kGemmRopeOp = "gemm_rope";
constexpr const char* kSiluMulEpilogueFlag = "silu_mul";  // a gemm flag
constexpr const char* kResidualFlag = "residual";         // an rmsnorm flag, and a gemm flag
// gemm's RMSNorm folded in: rows of A scaled by their reciprocal RMS (norm=gemm).
constexpr const char* kRmsNormFlag = "rms_norm";
// Attention's split and fused forms are its family's kernel=... knob (split: the chain of a
// scores GEMM, a softmax kernel and a value GEMM).
constexpr const char* kAttentionFormKnob = "kernel";
constexpr const char* kAttentionSplit = "split";

class Lowerer {
 public:
  Lowerer(const LayerGraph& g, const Grouping& grouping, const OpLookup& ops) : g_(g), ops_(ops) {
    out_.grouping = grouping;
  }

  const Node& node(const std::string& name) const {
    for (const Node& n : g_.nodes)
      if (n.name == name) return n;
    assert(false && "lower() names a node build_layer() did not make");
    return g_.nodes.front();
  }
  bool has(const std::string& name) const {
    return std::any_of(g_.nodes.begin(), g_.nodes.end(),
                       [&](const Node& n) { return n.name == name; });
  }

  // A kernel of `op` sized from `sizes_of`, with `flags` set to 1 (the op's other flags 0).
  void kernel(const std::string& op_name, const std::string& sizes_of,
              std::vector<std::string> nodes, const std::vector<std::string>& flags = {},
              Form form = {}, std::string note = "") {
    if (!out_.available()) return;
    const OpSignature* op = ops_(op_name);
    const std::string& what = nodes.front();
    if (!op) {
      out_.unavailable = fmt::format("no registered op '{}' for {}", op_name, what);
      return;
    }
    const Node& n = node(sizes_of);
    std::map<std::string, std::string> attrs;
    for (const std::string& size : op->sizes) {
      auto it = n.sizes.find(size);
      if (it == n.sizes.end()) {
        out_.unavailable = fmt::format(
            "op '{}' asks for a size '{}' the layer has no value of, for {}", op_name, size, what);
        return;
      }
      attrs[size] = std::to_string(it->second);
    }
    for (const std::string& flag : op->flags) attrs[flag] = "0";
    for (const std::string& flag : flags) {
      const auto& opt = op->optional_flags;
      if (std::find(op->flags.begin(), op->flags.end(), flag) == op->flags.end() &&
          std::find(opt.begin(), opt.end(), flag) == opt.end()) {
        out_.unavailable = fmt::format("op '{}' has no flag '{}' for {}", op_name, flag, what);
        return;
      }
      attrs[flag] = "1";
    }
    const std::string& dtype = g_.model.dtype;
    if (std::find(op->dtypes.begin(), op->dtypes.end(), dtype) == op->dtypes.end()) {
      out_.unavailable = fmt::format("op '{}' has no dtype {} for {}", op_name, dtype, what);
      return;
    }
    attrs["dtype"] = dtype;
    out_.kernels.push_back(Kernel{Problem(op_name, std::move(attrs)), std::move(form),
                                  std::move(nodes), std::move(note)});
  }

  Lowering run() {
    const Grouping& gr = out_.grouping;
    const bool fused_residual = gr.at("residual") == "fused";
    const std::string rope = gr.at("rope");
    const bool silu_epilogue = gr.at("silu_mul") == "epilogue";
    const bool flash = gr.at("attention") == "flash";
    const bool qk = g_.model.qk_norm;
    // norm=gemm: no RMSNorm kernel. Each norm is its GEMM's rms_norm flag; a fused residual add
    // is the residual flag of the GEMM that produces the addend: o_proj's for the attention
    // residual, and down_proj's for the MLP's, which opens the next layer (its input_residual)
    // or, after the last, feeds the model's final norm. So every layer's down_proj adds (layer
    // 0's too, for layer 1), and a layer past the first lists its input_residual under its own
    // down_proj, the same kernel as the previous layer's: every layer lowers to the same
    // kernels.
    const bool folded = gr.at("norm") == "gemm";
    auto with = [](std::vector<std::string> flags, bool on, const char* flag) {
      if (on) flags.push_back(flag);
      return flags;
    };

    auto norm = [&](const std::string& name, const std::string& residual_node) {
      const bool residual = has(residual_node);
      if (residual && !fused_residual) kernel(kAddOp, residual_node, {residual_node});
      if (folded) return;  // in the GEMMs around it
      if (residual && fused_residual)
        kernel("rmsnorm", name, {residual_node, name}, {kResidualFlag});
      else
        kernel("rmsnorm", name, {name});
    };
    norm("input_norm", "input_residual");
    // RoPE's own flags: Llama 3's scaling where the model has it, with the values the flag means.
    std::vector<std::string> rope_flags;
    if (const auto& rs = g_.model.rope_scaling) {
      const kernels::Llama3RopeScaling& l = kernels::kLlama3RopeScaling;
      if (rs->factor != l.factor || rs->low_freq_factor != l.low_freq_factor ||
          rs->high_freq_factor != l.high_freq_factor ||
          rs->original_max_position_embeddings != l.original_max_position_embeddings) {
        out_.unavailable = fmt::format(
            "rope_scaling (factor {}, low_freq_factor {}, high_freq_factor {}, "
            "original_max_position_embeddings {}) is not the rewrite of rope's '{}' flag (Llama "
            "3.1's: {}, {}, {}, {})",
            rs->factor, rs->low_freq_factor, rs->high_freq_factor,
            rs->original_max_position_embeddings, kRopeScalingFlag, l.factor, l.low_freq_factor,
            l.high_freq_factor, l.original_max_position_embeddings);
        out_.kernels.clear();
        return std::move(out_);
      }
      rope_flags.push_back(kRopeScalingFlag);
    }
    if (rope == "epilogue") {
      std::vector<std::string> nodes{"qkv_proj"};
      if (qk) nodes.insert(nodes.end(), {"q_norm", "k_norm"});
      nodes.push_back("rope");
      if (folded) nodes.push_back("input_norm");
      std::vector<std::string> flags = with(rope_flags, folded, kRmsNormFlag);
      if (qk) flags.push_back(kRopeNormFlag);
      kernel(kGemmRopeOp, "rope", nodes, flags);
    } else if (folded) {
      kernel("gemm", "qkv_proj", {"qkv_proj", "input_norm"}, {kRmsNormFlag});
    } else {
      kernel("gemm", "qkv_proj", {"qkv_proj"});
    }
    if (rope == "separate") {
      kernel("rmsnorm", "q_norm", {"q_norm"});
      kernel("rmsnorm", "k_norm", {"k_norm"});
      kernel(kRopeOp, "rope", {"rope"}, rope_flags);
    } else if (rope == "kernel") {
      std::vector<std::string> nodes;
      if (qk) nodes = {"q_norm", "k_norm"};
      nodes.push_back("rope");
      if (qk) rope_flags.push_back(kRopeNormFlag);
      kernel(kRopeOp, "rope", nodes, rope_flags);
    }
    // The attention exception: the slice of either form carries the scores' producer, so the
    // fused form can be built in it and the split form is timed whole, as one chain.
    const std::string attention = g_.shape.decode ? "attention_decode" : "attention_prefill";
    kernel(attention, "attention_scores",
           {"attention_scores", "attention_softmax", "attention_value"}, {},
           Form{kAttentionFormKnob, {kAttentionSplit}, flash},
           flash ? "one fused kernel; its slice carries the scores' producer"
                 : "the split chain (scores GEMM, softmax, value GEMM) timed as one slice");
    const bool o_residual = folded && fused_residual;
    if (o_residual)
      kernel("gemm", "o_proj", {"o_proj", "attention_residual"}, {kResidualFlag});
    else
      kernel("gemm", "o_proj", {"o_proj"});
    norm("post_attention_norm", "attention_residual");
    std::vector<std::string> gate_up_nodes{"gate_up_proj"};
    if (folded) gate_up_nodes.push_back("post_attention_norm");
    if (silu_epilogue) {
      gate_up_nodes.push_back("silu_mul");
      kernel("gemm", "gate_up_proj", gate_up_nodes,
             with({kSiluMulEpilogueFlag}, folded, kRmsNormFlag));
    } else {
      kernel("gemm", "gate_up_proj", gate_up_nodes, with({}, folded, kRmsNormFlag));
      kernel(kSiluMulOp, "silu_mul", {"silu_mul"});
    }
    if (folded && fused_residual) {
      std::vector<std::string> nodes{"down_proj"};
      if (has("input_residual")) nodes.push_back("input_residual");
      kernel("gemm", "down_proj", nodes, {kResidualFlag});
    } else {
      kernel("gemm", "down_proj", {"down_proj"});
    }
    if (!out_.available()) out_.kernels.clear();
    return std::move(out_);
  }

 private:
  const LayerGraph& g_;
  const OpLookup& ops_;
  Lowering out_;
};

}  // namespace

Lowering lower(const LayerGraph& graph, const Grouping& grouping, const OpLookup& ops) {
  for (const Fork& f : layer_forks(graph.model)) {
    auto it = grouping.find(f.name);
    if (it == grouping.end() ||
        std::find(f.options.begin(), f.options.end(), it->second) == f.options.end()) {
      Lowering l;
      l.grouping = grouping;
      l.unavailable = "the grouping gives fork '" + f.name + "' none of its options";
      return l;
    }
  }
  return Lowerer(graph, grouping, ops).run();
}

}  // namespace attune::graph
