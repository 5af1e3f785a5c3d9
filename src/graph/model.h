// A model's shape-only config (models/*.json): the published config.json fields a decoder layer's
// kernels depend on, under their published names, and no weights. Loading checks every field and
// refuses a bad file in one line naming the file and the field. Value types: thread-safe to copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/error.h"

namespace attune::graph {

// rope_scaling of the config: the frequency rewrite long-context releases apply (Llama 3.1's
// "llama3"). Shape-level only: it changes no kernel's sizes, but it is part of what RoPE computes.
struct RopeScaling {
  std::string rope_type;  // "llama3"
  double factor = 0;
  double low_freq_factor = 0;
  double high_freq_factor = 0;
  std::int64_t original_max_position_embeddings = 0;
};

struct ModelConfig {
  std::string name;  // the release's name, e.g. "Qwen/Qwen3-8B"
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t num_hidden_layers = 0;
  double rms_norm_eps = 0;
  double rope_theta = 0;
  bool qk_norm = false;  // per-head RMSNorm of q and k over head_dim before RoPE (Qwen3)
  std::optional<RopeScaling> rope_scaling;
  std::string dtype = "bf16";  // the release's weights' element type
};

// The config in `text`; `source` names it in errors (a path).
Result<ModelConfig> parse_model(const std::string& text, const std::string& source);
// The config in the file at `path`; a missing or unreadable file is invalid_argument too.
Result<ModelConfig> load_model(const std::string& path);

}  // namespace attune::graph
